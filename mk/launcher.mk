# The claude launcher (applets/claude, internal/bwrap, internal/sandbox,
# internal/sandboxcfg; docs/launcher.md).
#
# test-launcher   unit tests, and as root the sandbox tests as the test user
# e2e-agent       the real agent (scripts/fetch-agent, cached) through the
#                 sandbox as the test user: --version, state in its sandbox home;
#                 on a pty, a new project opens on the trust dialog
# bench-launcher  claude --shell -c true against bare bwrap, median and ratio
# fuzz-launcher   fuzz the ~/.claude-sandbox-init parser and the git index reader

.PHONY: test-launcher e2e-agent bench-launcher fuzz-launcher
E2E   += e2e-agent
BENCH += bench-launcher

test-launcher:
	$(GO) test $(TESTFLAGS) ./applets/claude/ ./internal/bwrap/ ./internal/sandbox/ ./internal/sandboxcfg/ ./internal/hostpath/

e2e-agent:
	agent="$$(scripts/fetch-agent)" && \
	CLAUDE_SBX_E2E=agent CLAUDE_SBX_E2E_AGENT="$$agent" $(GO) test $(TESTFLAGS) -run '^(TestE2EAgent|TestE2EAgentProfileNextProject)$$' -v ./applets/claude/

bench-launcher:
	GO='$(GO)' scripts/bench-launcher

fuzz-launcher:
	$(GO) test $(TESTFLAGS) -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./internal/sandboxcfg
	$(GO) test $(TESTFLAGS) -run '^$$' -fuzz '^FuzzGitlinks$$' -fuzztime $(FUZZTIME) ./internal/sandbox

# bench-nestedgit  a start in a project of 100,000 directories against the
#                  launcher of BASE (default main): the repository scan
.PHONY: bench-nestedgit
BENCH += bench-nestedgit

bench-nestedgit:
	GO='$(GO)' scripts/bench-nestedgit
