package testutil

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// E2EEnv selects the tests that `go test ./...` leaves out because they
// need the real agent, the real npm registry, a booted systemd machine or
// minutes of measuring: a comma-separated list of suites, such as
// CLAUDE_SBX_E2E=agent,update. The make targets set it (make e2e, make
// bench); E2E is the only reader.
const E2EEnv = "CLAUDE_SBX_E2E"

// The suites E2EEnv may name.
const (
	// E2EAgent: the real agent through the launcher. E2EAgentPathEnv
	// names its binary (scripts/fetch-agent caches it).
	E2EAgent = "agent"
	// E2EUpdate: claude-update installs the agent from the npm registry.
	E2EUpdate = "update"
	// E2ESystemd: the installed product in a machine booted with
	// systemd-nspawn (tests/systemd).
	E2ESystemd = "systemd"
	// E2EBenchDNS: netns-dns's latency, time to first byte and memory
	// (scripts/bench-dns), its fairness (scripts/bench-network) and what a
	// refused name costs a lookup (scripts/bench-holds); it prints numbers
	// and asserts nothing of time.
	E2EBenchDNS = "bench-dns"
	// E2ECgroup2: the budgets enforced (a memory hog, a fork bomb, the
	// scope's properties, latency probes, a delegated cgroup) in the
	// booted machine: it needs a host on
	// cgroup v2 whose controllers systemd can delegate to a user
	// manager, which a cgroup v1 host (this project's CI machine) cannot
	// give a machine; make e2e does not select it.
	E2ECgroup2 = "cgroup2"
	// E2EVM: tests in a guest with a real kernel, systemd as PID 1 on
	// cgroup v2, booted with qemu (internal/testutil/vm, make e2e-vm).
	E2EVM = "vm"
)

var e2eSuites = []string{E2EAgent, E2EUpdate, E2ESystemd, E2EBenchDNS, E2ECgroup2, E2EVM}

// E2EAgentPathEnv is the path of the agent binary for the E2EAgent suite:
// a value, not a selector.
const E2EAgentPathEnv = "CLAUDE_SBX_E2E_AGENT"

// E2E skips t unless E2EEnv names suite, and fails it if E2EEnv names a
// suite that does not exist (a typo would otherwise skip in silence).
func E2E(t testing.TB, suite string) {
	t.Helper()
	if !slices.Contains(e2eSuites, suite) {
		t.Fatalf("testutil.E2E: unknown suite %q (want one of %s)", suite, strings.Join(e2eSuites, ", "))
	}
	sel := selectedE2E(os.Getenv(E2EEnv))
	for _, s := range sel {
		if !slices.Contains(e2eSuites, s) {
			t.Fatalf("%s=%s: unknown suite %q (want a comma-separated list of %s)", E2EEnv, os.Getenv(E2EEnv), s, strings.Join(e2eSuites, ", "))
		}
	}
	if !slices.Contains(sel, suite) {
		t.Skipf("end-to-end suite %s: run make e2e (or set %s=%s)", suite, E2EEnv, suite)
	}
}

// selectedE2E splits the value of E2EEnv.
func selectedE2E(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// E2EAgentPath selects the test with the E2EAgent suite and returns the
// agent binary E2EAgentPathEnv names; selected without it, the test fails.
func E2EAgentPath(t testing.TB) string {
	t.Helper()
	E2E(t, E2EAgent)
	agent := os.Getenv(E2EAgentPathEnv)
	if agent == "" {
		t.Fatalf("%s=%s needs %s, the agent binary: make e2e-agent sets both (scripts/fetch-agent)", E2EEnv, E2EAgent, E2EAgentPathEnv)
	}
	return agent
}
