//go:build linux

package claude_test

import (
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// Token variables reach neither the agent's environment nor bwrap's, which
// the sandbox reads in /proc/1/environ; the start notice names them, never
// their values; keepenv in the config passes one.
func TestTokenVarsNotPassed(t *testing.T) {
	s := testutil.NewSandbox(t)
	m := marker(t)
	s.Env = []string{"GITHUB_TOKEN=ghp_" + m, "MY_DB_PASSWORD=pw" + m, "ANTHROPIC_API_KEY=sk-kept"}
	const script = `env; echo ---; tr '\0' '\n' < /proc/1/environ`
	for _, tt := range []struct {
		name, config string
		github       bool
	}{
		{"default", "", false},
		{"keepenv", "keepenv GITHUB_TOKEN\n", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s.WriteConfig(t, tt.config)
			r := s.Shell(t, script)
			mustOK(t, r)
			agent, pid1, _ := strings.Cut(r.Stdout, "---\n")
			if pid1 == "" {
				t.Fatalf("no /proc/1/environ read: %v", r)
			}
			for what, env := range map[string]string{"the agent's environment": agent, "/proc/1/environ": pid1} {
				if got := strings.Contains(env, "GITHUB_TOKEN=ghp_"+m+"\n"); got != tt.github {
					t.Errorf("GITHUB_TOKEN in %s: %v, want %v:\n%s", what, got, tt.github, env)
				}
				if strings.Contains(env, "pw"+m) {
					t.Errorf("MY_DB_PASSWORD in %s:\n%s", what, env)
				}
			}
			if !strings.Contains(agent, "ANTHROPIC_API_KEY=sk-kept\n") {
				t.Errorf("the agent's login was removed:\n%s", agent)
			}
			if strings.Contains(r.Stderr, m) {
				t.Errorf("a value is shown on stderr: %q", r.Stderr)
			}
			want := "not passing token variables into the sandbox: GITHUB_TOKEN MY_DB_PASSWORD "
			if tt.github {
				want = "not passing token variables into the sandbox: MY_DB_PASSWORD "
			}
			if !strings.Contains(r.Stderr, want) {
				t.Errorf("stderr lacks the notice %q: %q", want, r.Stderr)
			}
		})
	}
}
