# claude-sandbox: build, test and install the multicall binary.
#
# Knobs (make VAR=value): PREFIX, DESTDIR, SYSCONFDIR, CLAUDE_BINDIR,
# CLAUDE_HOME_NAME, NETNS, VERSION, BWRAP, APPARMOR, APPARMOR_DIR.

PREFIX     ?= /usr/local
DESTDIR    ?=
SYSCONFDIR ?= $(PREFIX)/etc
CLAUDE_BINDIR    ?= /opt/claude/bin
CLAUDE_HOME_NAME ?= .claude-home
NETNS      ?= agents
VERSION    ?= $(shell git -c safe.directory='*' describe --always --dirty 2>/dev/null || echo dev)
GO         ?= go

PKG     := github.com/claude-sandbox/claude-sandbox
BI      := $(PKG)/internal/buildinfo
LDFLAGS := -s -w \
	-X $(BI).Version=$(VERSION) \
	-X $(BI).Prefix=$(PREFIX) \
	-X $(BI).Sysconfdir=$(SYSCONFDIR) \
	-X $(BI).BinDir=$(CLAUDE_BINDIR) \
	-X $(BI).HomeName=$(CLAUDE_HOME_NAME) \
	-X $(BI).Netns=$(NETNS)
GOBUILD := CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)'

# Go test flags, passed by every target that runs go test; the suite runs
# root and unprivileged-user tests. The end-to-end targets select their
# suites with CLAUDE_SBX_E2E (internal/testutil/e2e.go), never with a tag.
TESTFLAGS ?= -count=1 -timeout 40m

# How long make fuzz (and the fuzz-PART targets) runs each fuzz target.
FUZZTIME ?= 60s

BIN := $(DESTDIR)$(PREFIX)/bin
# The user manager reads its units from /usr/lib/systemd/user and
# /usr/local/lib/systemd/user (systemd.unit(5)): agent.slice goes there.
USERUNITDIR := $(DESTDIR)$(PREFIX)/lib/systemd/user
MANDIR := $(DESTDIR)$(PREFIX)/share/man
MANPAGES := claude.1 claude-update.1 claude-sandbox-init.5 netns-firewall.conf.5 \
	netns-enter.8 netns-setup.8 netns-dns.8 claude-sandbox-doctor.8 claude-sandbox-net.1 \
	claude-sandbox-git.1

# The AppArmor profile (install/apparmor) for the bwrap the launcher runs.
# It is installed where AppArmor 4 policy is (abi/4.0: the releases that
# restrict user namespaces, Ubuntu 23.10 and later; APPARMOR=yes or no
# overrides), and loaded when this is a real install on a kernel with
# AppArmor. APPARMOR_DIR is not under
# PREFIX: AppArmor reads /etc/apparmor.d only.
BWRAP        ?= /usr/bin/bwrap
APPARMOR_DIR ?= /etc/apparmor.d
APPARMOR_PROFILE = $(DESTDIR)$(APPARMOR_DIR)/claude-sandbox-bwrap
APPARMOR ?= $(shell [ -e '$(APPARMOR_DIR)/abi/4.0' ] && echo yes)
APPARMOR_HAS_USERNS = [ '$(APPARMOR)' = yes ]
APPARMOR_LIVE = [ -z '$(DESTDIR)' ] && [ -d /sys/kernel/security/apparmor ] && command -v apparmor_parser >/dev/null

# Fragments in mk/ append to these.
E2E   :=
BENCH :=

.PHONY: all build test vet fuzz check e2e bench install uninstall clean agent generate apparmor4
all: build

build: build/claude-sandbox build/netns-enter

# Rebuild only when a source or the baked-in settings change, so that
# `make && sudo make install` does not need Go in root's PATH.
GOSRC := $(shell find cmd applets internal \( -name '*.go' -o -name '*.s' \) ! -name '*_test.go' 2>/dev/null) go.mod go.sum

build/ldflags: FORCE
	@mkdir -p build
	@echo '$(LDFLAGS)' | cmp -s - $@ || echo '$(LDFLAGS)' >$@

build/claude-sandbox: $(GOSRC) build/ldflags
	$(GOBUILD) -o $@ ./cmd/multicall

# The setuid helper links only the standard library, x/sys/unix and its own
# packages (see applets/netns-enter/deps_test.go), and starts at its own entry
# point (applets/netns-enter/entry_linux.go).
build/netns-enter: $(GOSRC) build/ldflags
	$(GOBUILD) -tags netnsenter_only -ldflags '$(LDFLAGS) -E=_netnsenter_rt0' -o $@ ./cmd/multicall

FORCE:

# Linux-only code is so by file name, with stubs elsewhere: vet for another
# OS keeps it that way. staticcheck is pinned and fetched by the Go toolchain
# into build/ (the module proxy, once); every build tag is checked. gofmt -l
# must print nothing; shellcheck (the Debian package) checks the shell
# scripts at its warning level (its info notes are mostly word splitting the
# scripts mean).
STATICCHECK_VERSION ?= v0.8.2
STATICCHECK = build/staticcheck-$(STATICCHECK_VERSION)
VET_TAGS = '' netnsenter_only
SHELL_SCRIPTS = $(wildcard scripts/*) .ci/run applets/netns-enter/bench.sh

$(STATICCHECK):
	@mkdir -p build
	GOBIN=$(CURDIR)/build/.staticcheck $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv build/.staticcheck/staticcheck $@ && rmdir build/.staticcheck

vet: $(STATICCHECK)
	@unformatted="$$(gofmt -l cmd applets internal tests man install)"; \
	if [ -n "$$unformatted" ]; then echo "gofmt -l: run gofmt -w on:" >&2; echo "$$unformatted" >&2; exit 1; fi
	@command -v shellcheck >/dev/null || { echo "vet: shellcheck not found: apt-get install shellcheck" >&2; exit 1; }
	shellcheck --severity=warning $(SHELL_SCRIPTS)
	for tags in $(VET_TAGS); do \
		$(GO) vet -tags "$$tags" ./... && \
		GOOS=darwin $(GO) vet -tags "$$tags" ./... && \
		$(STATICCHECK) -tags "$$tags" ./... && \
		GOOS=darwin $(STATICCHECK) -tags "$$tags" ./... || exit 1; \
	done

test:
	$(GO) test $(TESTFLAGS) ./...

# fuzz: every fuzz target of the tree, one after another, each for
# $(FUZZTIME) (go test -fuzz takes one target of one package at a time).
FUZZ_DIRS = $(sort $(dir $(shell grep -rl --include='*_test.go' '^func Fuzz' cmd applets internal tests 2>/dev/null)))

fuzz:
	@set -e; for dir in $(FUZZ_DIRS); do \
		for f in $$($(GO) test -list '^Fuzz' "./$$dir" | grep '^Fuzz'); do \
			echo "fuzz ./$$dir $$f for $(FUZZTIME)"; \
			$(GO) test $(TESTFLAGS) -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) "./$$dir"; \
		done; \
	done

# The generated files: the syscall tables and the precompiled default filter.
generate:
	$(GO) generate ./...

# The test command of the README: unit, integration and end-to-end tests.
check: vet apparmor4 test e2e

# apparmor4: an AppArmor 4 parser for the profile's parse test, from
# Debian's packages into the test cache (scripts/fetch-apparmor4; root).
apparmor4:
	-@scripts/fetch-apparmor4 >/dev/null

# agent: the real agent binary, cached outside the repository.
agent:
	@scripts/fetch-agent

install: build
	install -D -m 0755 build/claude-sandbox $(BIN)/claude-sandbox
	ln -sf claude-sandbox $(BIN)/claude
	ln -sf claude-sandbox $(BIN)/claude-update
	install -D -m 0644 install/sysctl.d/99-claude-code-sandbox.conf $(DESTDIR)$(PREFIX)/lib/sysctl.d/99-claude-code-sandbox.conf
	install -D -m 0644 install/claude-sandbox-init $(DESTDIR)$(PREFIX)/share/claude-sandbox/claude-sandbox-init
	install -D -m 0644 install/claude-sandbox-limits $(DESTDIR)$(PREFIX)/share/claude-sandbox/limits.example
	install -D -m 0644 install/systemd/agent.slice $(USERUNITDIR)/agent.slice
	@if [ -z "$(DESTDIR)" ] && command -v sysctl >/dev/null; then \
		sysctl -q -e -p $(PREFIX)/lib/sysctl.d/99-claude-code-sandbox.conf || true; fi
	@if $(APPARMOR_HAS_USERNS); then \
		install -d -m 0755 '$(dir $(APPARMOR_PROFILE))' && \
		sed 's|@BWRAP@|$(BWRAP)|g' install/apparmor/claude-sandbox-bwrap >'$(APPARMOR_PROFILE).tmp' && \
		chmod 0644 '$(APPARMOR_PROFILE).tmp' && mv -f '$(APPARMOR_PROFILE).tmp' '$(APPARMOR_PROFILE)' && \
		echo "installed AppArmor profile $(APPARMOR_PROFILE) for $(BWRAP)" && \
		if $(APPARMOR_LIVE); then apparmor_parser -r '$(APPARMOR_PROFILE)'; fi; fi
	install -d -m 0755 $(MANDIR)/man1 $(MANDIR)/man5 $(MANDIR)/man8
	for p in $(MANPAGES); do install -m 0644 man/$$p $(MANDIR)/man$${p##*.}/$$p || exit 1; done

uninstall:
	rm -f $(BIN)/claude $(BIN)/claude-update $(BIN)/claude-sandbox
	rm -f $(DESTDIR)$(PREFIX)/lib/sysctl.d/99-claude-code-sandbox.conf
	rm -f $(DESTDIR)$(PREFIX)/share/claude-sandbox/claude-sandbox-init
	rm -f $(DESTDIR)$(PREFIX)/share/claude-sandbox/limits.example
	rm -f $(USERUNITDIR)/agent.slice
	-rmdir $(DESTDIR)$(PREFIX)/share/claude-sandbox $(DESTDIR)$(PREFIX)/lib/sysctl.d 2>/dev/null
	-rmdir $(USERUNITDIR) $(DESTDIR)$(PREFIX)/lib/systemd 2>/dev/null
	@if [ -f '$(APPARMOR_PROFILE)' ]; then \
		if $(APPARMOR_LIVE); then apparmor_parser -R '$(APPARMOR_PROFILE)' || true; fi; \
		rm -f '$(APPARMOR_PROFILE)' && echo "removed AppArmor profile $(APPARMOR_PROFILE)"; fi
	for p in $(MANPAGES); do rm -f $(MANDIR)/man$${p##*.}/$$p; done
	-rmdir $(MANDIR)/man1 $(MANDIR)/man5 $(MANDIR)/man8 2>/dev/null

clean:
	rm -rf build

include $(wildcard mk/*.mk)

# After the fragments, so that their E2E and BENCH are complete.
e2e: $(E2E)

bench: $(BENCH)
