package sandbox

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
	qt "github.com/claude-sandbox/claude-sandbox/internal/quote"
)

// A project that is a linked worktree has its git directory
// (COMMON/worktrees/NAME), and the common directory that holds its
// objects, refs and config, outside the project. Git inside
// needs both: they are bound read-only at their own paths, which the
// sandbox otherwise does not see. Their configs are consulted as the main
// checkout's are (gitConsult.repo), and a read-only bind leaves nothing in
// them writable.

// exposeWorktree exposes the common directory of the linked worktree whose
// .git file is dotgit. The .git file may be the agent's (made in an earlier
// session, or in a repository it created): what it names is shown only if
// it is a linked worktree's git directory that names this .git file back,
// which only a git outside the sandbox could have written there; anything
// else (a submodule's or --separate-git-dir's git directory outside the
// mount) stays unseen, as git inside then says.
func (g *gitGuard) exposeWorktree(dotgit, gitdir, common string) error {
	if dotgit == gitdir || filepath.Dir(gitdir) != filepath.Join(common, "worktrees") {
		return nil
	}
	b, err := g.h.ReadFile(filepath.Join(gitdir, "gitdir"), MaxGitFile)
	if err != nil {
		return nil
	}
	back := strings.TrimSpace(string(b))
	if !filepath.IsAbs(back) {
		back = filepath.Join(gitdir, back) // worktree.useRelativePaths
	}
	if filepath.Clean(back) != dotgit {
		return nil
	}
	return g.expose(common)
}

// expose records host directory p (a git directory or common directory of
// a work tree in the mount) to be bound read-only at its path inside when
// no mount of the plan shows that host path there. It must be what the
// host reaches at p, with no symlink on the way: bwrap would follow one.
func (g *gitGuard) expose(p string) error {
	if p == g.src || under(p, g.src) {
		return nil // in the mount: made read-only by readOnlyIfInside
	}
	real, err := g.c.resolve(p)
	if err != nil {
		return g.fail("%s: %v", qt.String(p), err)
	}
	fi, err := g.h.Lstat(real)
	if err != nil || !fi.IsDir() {
		return nil // git inside fails as it would on the host
	}
	if real != p {
		return g.fail("git directory %s is reached through a symlink (to %s): name %s in the .git file or commondir", qt.String(p), qt.String(real), qt.String(real))
	}
	if i, rel := g.l.covering(p, g.base); i >= 0 {
		o := g.l.Plan.Ops[i]
		if filepath.Join(o.Src, rel) == p {
			if writableBind(o) {
				// Another writable mount: its own guard makes its
				// repositories read-only, not this one's git directory.
				return fmt.Errorf("git directory %s of %s lies in %s, which the sandbox can write: bind it read-only in %s (ro %s)", qt.String(p), qt.String(g.src), qt.String(o.Src), g.s.ConfigName, qt.String(p))
			}
			return nil // already visible read-only
		}
	}
	for _, e := range g.c.expose {
		if p == e || under(p, e) {
			return nil
		}
	}
	kept := g.c.expose[:0]
	for _, e := range g.c.expose {
		if !under(e, p) {
			kept = append(kept, e)
		}
	}
	g.c.expose = append(kept, p)
	return nil
}

// appendExposed binds the recorded git directories read-only.
func (l *Launch) appendExposed(c *gitConsult) {
	for _, p := range c.expose {
		l.Plan.Ops = append(l.Plan.Ops, bwrap.Op{Kind: bwrap.ROBind, Src: p, Dest: p})
		l.Notes = append(l.Notes, "git: "+qt.String(p)+" visible read-only (the git directory of a linked worktree or submodule)")
	}
}
