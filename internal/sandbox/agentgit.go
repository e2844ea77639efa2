package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
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
	case !fi.IsDir():
		return fmt.Errorf("git commit (%s): %s is a .git file (a linked worktree or a submodule): the agent can commit only in a repository's main work tree; remove `git commit` there", from, dotgit)
	case k < 0:
		return nil // the config keeps .git from being writable
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
	l.AgentGit, l.agentGitProject = agent, pp.Dir
	if err := l.usePush(h, s, agent, pp.Dir); err != nil {
		return err
	}
	l.Notes = append(l.Notes, fmt.Sprintf("git commit (%s): the agent commits in %s, bound at %s; %s is read-only at %s; fetch its work with: git fetch %s 'refs/heads/*:refs/remotes/agent/*'",
		from, agent, dotgit, dotgit, InsideHostGit, agent))
	return nil
}

// agentGitSetup makes the agent's repository on its first start (the
// project's branches, HEAD and index, the work tree untouched) and fetches
// the project's branches as host/* at every later one, then runs the
// command.
const agentGitSetup = `set -e
(
cd %s
g=%s
if [ ! -e .git/HEAD ]; then
	git init -q
	git fetch -q --no-tags --update-head-ok "$g" '+refs/heads/*:refs/heads/*'
	if ref=$(git --git-dir="$g" symbolic-ref -q HEAD); then git symbolic-ref HEAD "$ref"; fi
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
	script := fmt.Sprintf(agentGitSetup, quote(l.agentGitProject), quote(InsideHostGit), strings.Join(remotes, " "), path)
	l.Command = append([]string{"/bin/sh", "-c", strings.TrimSpace(script), "sh"}, l.Command...)
}
