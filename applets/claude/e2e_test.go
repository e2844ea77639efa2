//go:build linux

package claude_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// TestE2EAgent runs the real agent (the path in CLAUDE_SBX_E2E_AGENT, set
// by `make e2e-agent` from scripts/fetch-agent) through the sandbox as the
// test user.
func TestE2EAgent(t *testing.T) {
	agent := testutil.E2EAgentPath(t)
	s := testutil.NewSandbox(t)
	dst := filepath.Join(s.BinDir, "claude")
	if err := os.Remove(dst); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(agent, dst); err != nil {
		testutil.CopyFile(t, agent, dst, 0o755)
	}

	r := s.Run(t, "--version")
	if r.Code != 0 || !regexp.MustCompile(`^\d+\.\d+\.\d+ \(Claude Code\)\n$`).MatchString(r.Stdout) {
		t.Fatalf("claude --version through the sandbox: %v", r)
	}
	t.Logf("agent: %s", r.Stdout)

	// A command that writes the agent's state.
	if r := s.Run(t, "mcp", "list"); r.Code != 0 {
		t.Fatalf("claude mcp list through the sandbox: %v", r)
	}
	for _, name := range []string{".claude.json", ".claude"} {
		if _, err := os.Stat(filepath.Join(projectHome(t, s, s.Home), name)); err != nil {
			t.Errorf("%s not in the sandbox home: %v", name, err)
		}
		if _, err := os.Lstat(filepath.Join(s.Home, name)); err == nil {
			t.Errorf("%s written to the real home", name)
		}
	}
}
