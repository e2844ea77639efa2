# The real agent's tool loop in the sandbox, against a fake Messages API
# (internal/testutil/fakeapi; docs/development.md).
#
# e2e-agent-loop  claude -p as the test user through the launcher, the fake
#                 API on loopback: tool results from Bash, Read, Write and
#                 Edit show the project, the sandbox, the exit status
# bench-agent     one agent turn with one Bash tool call, sandboxed against
#                 bare: medians of wall and CPU time and their ratios (root:
#                 each run gets a cgroup)

.PHONY: e2e-agent-loop bench-agent
E2E   += e2e-agent-loop
BENCH += bench-agent

e2e-agent-loop:
	agent="$$(scripts/fetch-agent)" && \
	CLAUDE_SBX_E2E=agent CLAUDE_SBX_E2E_AGENT="$$agent" $(GO) test $(TESTFLAGS) -run '^TestE2EAgentLoop' -v ./applets/claude/

bench-agent:
	GO='$(GO)' scripts/bench-agent
