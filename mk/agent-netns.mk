# bench-agent-netns  one agent turn with one Bash tool call, sandboxed in a
#                    network namespace with the egress allowlist (a world of
#                    throwaway namespaces the script makes and removes),
#                    against bare: medians of wall and CPU time and their
#                    ratios (root, and the test user to run the agent as)

.PHONY: bench-agent-netns
BENCH += bench-agent-netns

bench-agent-netns:
	GO='$(GO)' scripts/bench-agent-netns
