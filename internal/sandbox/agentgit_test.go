package sandbox

import (
	"slices"
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
		{name: "git commit in a submodule is refused", config: "git commit", host: func(h *fakeHost) {
			delete(h.files, p+"/.git/index")
			h.files[p+"/.git"] = "f"
			h.contents[p+"/.git"] = "gitdir: /home/u/main/.git/modules/p\n"
		}, err: "git commit (~/.claude-sandbox-init:1): /home/u/projects/p/.git: a submodule (its git directory has no commondir): the agent commits in a submodule only from its superproject's main work tree; remove `git commit` there"},
		{name: "git commit in a linked worktree: the agent's repository over its git directory", config: "git commit", wrap: true, host: func(h *fakeHost) {
			linkedWorktree(h, p, "/home/u/main", p+"/.git\n")
			h.files["/home/u/main/.git/worktrees/p/HEAD"] = "f"
			h.contents["/home/u/main/.git/worktrees/p/HEAD"] = "ref: refs/heads/feature\n"
		}, want: []bwrap.Op{
			{Kind: bwrap.ROBind, Src: p + "/.git", Dest: p + "/.git"},
			{Kind: bwrap.ROBind, Src: "/home/u/main/.git", Dest: "/home/u/main/.git"},
			{Kind: bwrap.ROBind, Src: "/home/u/main/.git", Dest: InsideHostGit},
			{Kind: bwrap.Bind, Src: agent, Dest: "/home/u/main/.git/worktrees/p"},
		}},
		{name: "git commit in a linked worktree with a detached HEAD is refused", config: "git commit", host: func(h *fakeHost) {
			linkedWorktree(h, p, "/home/u/main", p+"/.git\n")
			h.files["/home/u/main/.git/worktrees/p/HEAD"] = "f"
			h.contents["/home/u/main/.git/worktrees/p/HEAD"] = "0123456789012345678901234567890123456789\n"
		}, err: "git commit (~/.claude-sandbox-init:1): /home/u/projects/p/.git: the worktree's HEAD is detached: check out a branch in it (git switch -c NAME); remove `git commit` there"},
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

func TestAgentPush(t *testing.T) {
	const p = "/home/u/projects/p"
	agent := AgentGitDir("/home/u", p)
	push := strings.TrimSuffix(agent, ".git") + ".push"
	for _, tt := range []struct {
		name, config string
		want         []PushRule
		ops          []bwrap.Op
		notice       string
	}{
		{name: "none"},
		{name: "without git commit", config: "git push origin", notice: "git push (~/.claude-sandbox-init:1): not used: the agent pushes only from a repository of its own; add `git commit` to ~/.claude-sandbox-init"},
		{name: "default pattern", config: "git commit\ngit push origin",
			want: []PushRule{{Remote: "origin", Patterns: []string{"agent/*"}, CIPaths: DefaultCIPaths, Origin: "~/.claude-sandbox-init:2"}},
			ops: []bwrap.Op{
				{Kind: bwrap.ROBind, Src: push + "/sock.d", Dest: InsidePushDir},
				{Kind: bwrap.ROBind, Src: "/usr/local/bin/claude-sandbox", Dest: InsidePushBin + "/git-remote-sbx"},
			}},
		{name: "patterns, ci paths, ci, the last line of a remote wins", config: "git commit\ngit push origin x\ngit push fork feat/* ci:.woodpecker/ ci\ngit push origin agent/* bot/*",
			want: []PushRule{
				{Remote: "fork", Patterns: []string{"feat/*"}, CI: true, CIPaths: append(slices.Clone(DefaultCIPaths), ".woodpecker/"), Origin: "~/.claude-sandbox-init:3"},
				{Remote: "origin", Patterns: []string{"agent/*", "bot/*"}, CIPaths: DefaultCIPaths, Origin: "~/.claude-sandbox-init:4"},
			}},
		{name: "in an if that does not hold", config: "git commit\nif pwd-under ~/other\ngit push origin\nend"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := baseSpec()
			s.Launcher = "/usr/local/bin/claude-sandbox"
			s.Config = parseConfig(t, s, tt.config)
			l, err := Build(gitHost(t), s)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, l.Pushes); diff != "" {
				t.Errorf("pushes (-want +got):\n%s", diff)
			}
			if tt.want != nil && l.PushDir != push {
				t.Errorf("PushDir = %s, want %s", l.PushDir, push)
			}
			for _, o := range tt.ops {
				if !slices.ContainsFunc(l.Plan.Ops, func(g bwrap.Op) bool { return g.Kind == o.Kind && g.Src == o.Src && g.Dest == o.Dest }) {
					t.Errorf("no op %+v in the plan", o)
				}
			}
			if tt.notice != "" && !slices.Contains(l.Notices, tt.notice) {
				t.Errorf("notices %q lack %q", l.Notices, tt.notice)
			}
			if tt.want != nil && !strings.Contains(l.Command[2], `git config "remote.$r.url" "sbx::$r"`) {
				t.Errorf("the setup does not point the remotes at the launcher: %q", l.Command[2])
			}
		})
	}
}
