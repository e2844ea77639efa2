package sandbox

import (
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
)

// TestPwdUnderNotSteered: `if pwd-under DIR` follows a symlink on DIR's
// way only where the agent cannot have made it. An agent in ~/src/mono
// that replaces services/payments with a link to the home must not make
// every project "below" it.
func TestPwdUnderNotSteered(t *testing.T) {
	const cfg = "if pwd-under ~/src/mono/services/payments\n  ro ~/.ssh\nend\n"
	sshBound := func(l *Launch) bool {
		for _, o := range l.Plan.Ops {
			if o.Kind == bwrap.ROBind && o.Src == "/home/u/.ssh" {
				return true
			}
		}
		return false
	}
	for _, tt := range []struct {
		name   string
		link   string // where ~/src/mono/services/payments points, "" for a directory
		pwd    string
		want   bool
		notice string
	}{
		{"below the directory", "", "/home/u/src/mono/services/payments/api", true, ""},
		{"elsewhere", "", "/home/u/projects/p", false, ""},
		{"a link planted in ~/src", "../../..", "/home/u/projects/p", false,
			"~/.claude-sandbox-init:1: pwd-under: /home/u/src/mono/services/payments is reached through the symlink /home/u/src/mono/services/payments in /home/u/src, which the sandbox can write: not followed (the condition is false); name the real directory"},
		{"a link outside what the sandbox can write", "", "/home/u/projects/p/x", true, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := debianHost()
			for _, d := range []string{"/home/u/.ssh", "/home/u/src", "/home/u/src/mono", "/home/u/src/mono/services", "/home/u/projects/p/x"} {
				h.files[d] = "d"
			}
			h.files["/home/u/src/mono/services/payments"] = "d"
			if tt.link != "" {
				h.files["/home/u/src/mono/services/payments"] = tt.link
			}
			s := baseSpec()
			s.Pwd = tt.pwd
			c := cfg
			if tt.name == "a link outside what the sandbox can write" {
				// A link of the system's, e.g. /srv/payments ->
				// the user's project.
				h.files["/srv"] = "d"
				h.files["/srv/payments"] = "/home/u/projects/p"
				c = "if pwd-under /srv/payments\n  ro ~/.ssh\nend\n"
			}
			s.Config = parseConfig(t, s, c)
			l, err := Build(h, s)
			if err != nil {
				t.Fatal(err)
			}
			if got := sshBound(l); got != tt.want {
				t.Errorf("~/.ssh bound = %v, want %v (notices %q)", got, tt.want, l.Notices)
			}
			var got string
			for _, n := range l.Notices {
				if strings.Contains(n, "pwd-under") {
					got = n
				}
			}
			if got != tt.notice {
				t.Errorf("notice = %q, want %q", got, tt.notice)
			}
		})
	}
}
