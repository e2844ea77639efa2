package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
	qt "github.com/claude-sandbox/claude-sandbox/internal/quote"
	"github.com/claude-sandbox/claude-sandbox/internal/sandboxcfg"
)

// With `git commit` in the config the agent commits in a repository of its
// own: a directory beside the home (AgentGitDir) is bound over the project's
// .git inside, and the project's own .git is visible read-only at
// InsideHostGit, from which the agent's repository fetches the branches at
// each start. Host git never reads the agent's repository as the project's
// (the project's .git on the host is untouched); the user fetches from it,
// which runs only git upload-pack there, and upload-pack runs nothing a
// repository configures (see gitsecurityboundary(7)).

// InsideHostGit is where the project's .git is, read-only, inside.
const InsideHostGit = "/run/claude-sandbox/git"

// AgentGitDir returns the host directory of the agent's repository for
// project: ~/.claude-sandbox-git/NAME-HASH.git.
func AgentGitDir(home, project string) string {
	sum := sha256.Sum256([]byte(project))
	return filepath.Join(home, ".claude-sandbox-git", filepath.Base(project)+"-"+hex.EncodeToString(sum[:8])+".git")
}

// useAgentGit puts the agent's repository in place of the read-only
// project .git protectGit bound (among the ops from base on), if the config
// says git commit.
func (l *Launch) useAgentGit(h Host, s Spec, pp projectPlan, base int) error {
	args, from, err := l.setting(h, s, sandboxcfg.Git, []string{sandboxcfg.GitReadOnly})
	if err != nil {
		return err
	}
	if args[0] != sandboxcfg.GitCommit {
		if rules, err := l.pushRules(h, s); err != nil {
			return err
		} else if len(rules) > 0 {
			l.Notices = append(l.Notices, fmt.Sprintf("git push (%s): not used: the agent pushes only from a repository of its own; add `git commit` to %s", rules[0].Origin, s.ConfigName))
		}
		return nil
	}
	if pp.Dir == "" || !pp.RW {
		l.Notes = append(l.Notes, "git commit ("+from+"): not used: no read-write project")
		return nil
	}
	dotgit := filepath.Join(pp.Dir, ".git")
	k := slices.IndexFunc(l.Plan.Ops[base:], func(o bwrap.Op) bool {
		return o.Kind == bwrap.ROBind && o.Src == dotgit && o.Dest == dotgit
	})
	if k >= 0 {
		k += base
	}
	fi, err := h.Lstat(dotgit)
	switch {
	case err != nil:
		l.Notes = append(l.Notes, "git commit ("+from+"): not used: "+pp.Dir+" is not a git repository")
		return nil
	case k < 0:
		return nil // the config keeps .git from being writable
	case !fi.IsDir():
		return l.useAgentGitInWorktree(h, s, pp, from, dotgit)
	}
	agent := AgentGitDir(s.Home, pp.Dir)
	l.Plan.Ops[k] = bwrap.Op{Kind: bwrap.ROBind, Src: dotgit, Dest: InsideHostGit}
	ops := []bwrap.Op{{Kind: bwrap.Bind, Src: agent, Dest: dotgit}}
	// The submodules' repositories, read-only, where their .git files
	// point.
	modules := filepath.Join(dotgit, "modules")
	if fi, err := h.Lstat(modules); err == nil && fi.IsDir() {
		ops = append(ops, bwrap.Op{Kind: bwrap.ROBind, Src: modules, Dest: modules})
	}
	l.Plan.Ops = slices.Insert(l.Plan.Ops, k+1, ops...)
	return l.agentGitIn(h, s, pp, from, agent, dotgit, dotgit, "")
}

// agentGitIn records the agent's repository agent, bound at gitdir for
// the project whose .git is dotgit, checked out on ref ("": the user's
// repository's HEAD), and the pushes from it.
func (l *Launch) agentGitIn(h Host, s Spec, pp projectPlan, from, agent, dotgit, gitdir, ref string) error {
	l.AgentGit, l.agentGitProject, l.agentGitDir, l.agentGitRef = agent, pp.Dir, gitdir, ref
	if err := l.usePush(h, s, agent, pp.Dir); err != nil {
		return err
	}
	l.Notes = append(l.Notes, fmt.Sprintf("git commit (%s): the agent commits in %s, bound at %s; %s is read-only at %s; fetch its work with: git fetch %s 'refs/heads/*:refs/remotes/agent/*'",
		from, agent, gitdir, dotgit, InsideHostGit, agent))
	return nil
}

// useAgentGitInWorktree is git commit in a linked worktree, whose .git
// file dotgit names its git directory in the repository's common
// directory (common/worktrees/NAME): the agent's repository is bound
// there, over it, checked out on the worktree's branch and filled from
// the common directory, which stays read-only (at its path and at
// InsideHostGit). The .git file stays the read-only mount protectGit made.
func (l *Launch) useAgentGitInWorktree(h Host, s Spec, pp projectPlan, from, dotgit string) error {
	refuse := func(why string) error {
		return fmt.Errorf("git commit (%s): %s: %s; remove `git commit` there", from, qt.String(dotgit), why)
	}
	b, err := h.ReadFile(dotgit, MaxGitFile)
	if err != nil {
		return refuse(err.Error())
	}
	gitdir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !ok {
		return refuse("not a .git file (no gitdir: line)")
	}
	if gitdir = strings.TrimSpace(gitdir); !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(pp.Dir, gitdir)
	}
	gitdir = filepath.Clean(gitdir)
	c, err := h.ReadFile(filepath.Join(gitdir, "commondir"), MaxGitFile)
	if err != nil {
		return refuse("a submodule (its git directory has no commondir): the agent commits in a submodule only from its superproject's main work tree")
	}
	common := strings.TrimSpace(string(c))
	if !filepath.IsAbs(common) {
		common = filepath.Join(gitdir, common)
	}
	common = filepath.Clean(common)
	if filepath.Dir(gitdir) != filepath.Join(common, "worktrees") {
		return refuse("its git directory " + qt.String(gitdir) + " is not one of the worktrees of " + qt.String(common))
	}
	head, err := h.ReadFile(filepath.Join(gitdir, "HEAD"), MaxGitFile)
	if err != nil {
		return refuse(err.Error())
	}
	ref, ok := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: ")
	if !ok || !strings.HasPrefix(ref, "refs/heads/") {
		return refuse("the worktree's HEAD is detached: check out a branch in it (git switch -c NAME)")
	}
	// The git directory must be read-only inside before the agent's
	// repository goes over it: visible through the common directory's
	// read-only mount.
	if i, rel := l.covering(gitdir, len(l.Plan.Ops)); i < 0 || writableBind(l.Plan.Ops[i]) || filepath.Join(l.Plan.Ops[i].Src, rel) != gitdir {
		return refuse("its git directory " + qt.String(gitdir) + " is not visible read-only in the sandbox")
	}
	agent := AgentGitDir(s.Home, pp.Dir)
	l.Plan.Ops = append(l.Plan.Ops,
		bwrap.Op{Kind: bwrap.ROBind, Src: common, Dest: InsideHostGit},
		bwrap.Op{Kind: bwrap.Bind, Src: agent, Dest: gitdir})
	return l.agentGitIn(h, s, pp, from, agent, dotgit, gitdir, ref)
}

// agentGitSetup makes the agent's repository on its first start (the
// project's branches, HEAD and index, the work tree untouched) and fetches
// the project's branches as host/* at every later one, then runs the
// command.
const agentGitSetup = `set -e
(
cd %s
g=%s
d=%s
ref=%s
if [ ! -e "$d/HEAD" ]; then
	git --git-dir="$d" --work-tree=. init -q
	git fetch -q --no-tags --update-head-ok "$g" '+refs/heads/*:refs/heads/*'
	if [ -n "$ref" ] || ref=$(git --git-dir="$g" symbolic-ref -q HEAD); then git symbolic-ref HEAD "$ref"; fi
	if git rev-parse -q --verify HEAD >/dev/null; then git reset -q; fi
else
	git fetch -q --no-tags "$g" '+refs/heads/*:refs/remotes/host/*'
fi
for r in %s; do git config "remote.$r.url" "sbx::$r"; done
)
%s
exec "$@"`

// wrapAgentGit runs agentGitSetup before the command.
func (l *Launch) wrapAgentGit() {
	if l.AgentGit == "" {
		return
	}
	var remotes []string
	path := ""
	for _, r := range l.Pushes {
		remotes = append(remotes, quote(r.Remote))
	}
	if len(remotes) > 0 {
		path = `PATH="$PATH:` + InsidePushBin + `"; export PATH`
	}
	script := fmt.Sprintf(agentGitSetup, quote(l.agentGitProject), quote(InsideHostGit), quote(l.agentGitDir), quote(l.agentGitRef), strings.Join(remotes, " "), path)
	l.Command = append([]string{"/bin/sh", "-c", strings.TrimSpace(script), "sh"}, l.Command...)
}
