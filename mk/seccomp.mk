# seccomp filter (internal/seccomp, tests/seccomp).
#
# test-seccomp  unit tests (BPF interpreter, cache shape, tables) and, as root,
#               the in-sandbox tests run as the unprivileged test user
# fuzz-seccomp  differential fuzzing of the compiled program against the policy
# seccomp-table the policy as a table for this machine's architecture
# bench-seccomp getppid loop and find /usr in bwrap, with the filter and without

.PHONY: test-seccomp fuzz-seccomp seccomp-table bench-seccomp

test-seccomp:
	$(GO) test $(TESTFLAGS) ./internal/seccomp/... ./tests/seccomp/...

fuzz-seccomp:
	$(GO) test $(TESTFLAGS) -run '^$$' -fuzz '^FuzzFilter$$' -fuzztime $(FUZZTIME) ./internal/seccomp

seccomp-table:
	@$(GO) run ./internal/seccomp/writebpf.go -table

bench-seccomp:
	GO='$(GO)' scripts/bench-seccomp

BENCH += bench-seccomp
