package sandbox

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
)

func TestAgentGit(t *testing.T) {
	const p = "/home/u/projects/p"
	agent := AgentGitDir("/home/u", p)
	if !strings.HasPrefix(agent, "/home/u/.claude-sandbox-git/p-") || !strings.HasSuffix(agent, ".git") || AgentGitDir("/home/u", "/home/u/x/p") == agent {
		t.Fatalf("AgentGitDir = %s: want ~/.claude-sandbox-git/p-HASH.git, one per project", agent)
	}
	tests := []struct {
		name   string
		config string
		host   func(*fakeHost)
		want   []bwrap.Op // after the project's bind
		wrap   bool
		err    string
	}{
		{name: "read-only by default", want: []bwrap.Op{{Kind: bwrap.ROBind, Src: p + "/.git", Dest: p + "/.git"}}},
		{name: "git commit", config: "git commit", wrap: true, want: []bwrap.Op{
			{Kind: bwrap.ROBind, Src: p + "/.git", Dest: InsideHostGit},
			{Kind: bwrap.Bind, Src: agent, Dest: p + "/.git"},
			{Kind: bwrap.ROBind, Src: p + "/.git/modules", Dest: p + "/.git/modules"},
		}},
		{name: "the last git line that applies wins", config: "git commit\nif pwd-under ~/projects\ngit read-only\nend",
			want: []bwrap.Op{{Kind: bwrap.ROBind, Src: p + "/.git", Dest: p + "/.git"}}},
		{name: "git commit in a read-only project does nothing", config: "git commit\nproject ro"},
		{name: "git commit where the config keeps .git read-only does nothing", config: "git commit\nro ~/projects/p/.git",
			want: []bwrap.Op{{Kind: bwrap.ROBind, Src: p + "/.git", Dest: p + "/.git"}}},
		{name: "git commit in a linked worktree is refused", config: "git commit", host: func(h *fakeHost) {
			delete(h.files, p+"/.git/index")
			h.files[p+"/.git"] = "f"
			h.contents[p+"/.git"] = "gitdir: /home/u/main/.git/worktrees/p\n"
		}, err: "git commit (~/.claude-sandbox-init:1): /home/u/projects/p/.git is a .git file (a linked worktree or a submodule): the agent can commit only in a repository's main work tree; remove `git commit` there"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := gitHost(t)
			if tt.host != nil {
				tt.host(h)
			}
			s := baseSpec()
			s.Config = parseConfig(t, s, tt.config)
			l, err := Build(h, s)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("Build error = %v, want %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []bwrap.Op
			for i, o := range l.Plan.Ops {
				if o.Dest == p && o.IsBind() {
					got = l.Plan.Ops[i+1:]
				}
			}
			if len(got) == 0 {
				got = nil
			}
			if diff := cmp.Diff(tt.want, got, ignoreOrigin); diff != "" {
				t.Errorf("ops after the project (-want +got):\n%s", diff)
			}
			if wrapped := l.Command[0] == "/bin/sh" && strings.Contains(l.Command[2], InsideHostGit); wrapped != tt.wrap || (tt.wrap) != (l.AgentGit == agent) {
				t.Errorf("command %q, AgentGit %q: want the setup wrapped around it = %v", l.Command, l.AgentGit, tt.wrap)
			}
			if tt.wrap && !cmp.Equal(l.Command[4:], []string{"/opt/claude/bin/claude", "-p", "hello world", "", "it's"}) {
				t.Errorf("command after the setup = %q, want the agent and its arguments", l.Command[4:])
			}
		})
	}
}
