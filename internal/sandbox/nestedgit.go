package sandbox

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	qt "github.com/claude-sandbox/claude-sandbox/internal/quote"
)

// A repository anywhere in a directory the sandbox can write is one the
// host's git may run: a prompt's git status after a bare cd into it runs
// its core.fsmonitor and reads its includes, and git trusts it because the
// agent writes as the user. At start every repository found in the
// writable mounts, at any depth, is protected as the project's own (see
// protectGit); at exit the launcher makes inert every one that was not
// there at start or whose config or hooks changed (GitScan,
// applets/claude/inert_linux.go: by birth and change times, so that it
// needs no list from the start).

// The bounds of the start scan: entries listed and time spent (a start in
// a tree of 100,000 directories stays within 1.5 times one without the
// scan; scripts/bench-nestedgit). What lies beyond them is named in a
// notice; a repository there is not read-only inside, and the exit pass,
// which needs nothing from the start scan, makes it inert if the session
// made it or changed its config or hooks.
// The time bound applies only once MinGitScanDirs directories have been
// listed: a small tree is always covered whole, however loaded the machine
// (a start descheduled for longer than the bound would otherwise leave its
// few repositories writable, and say so).
const (
	MaxGitScanEntries = 200_000
	MaxGitScanTime    = 8 * time.Millisecond
	MinGitScanDirs    = 256
)

// GitScan is what the start scan found and where the exit pass looks.
type GitScan struct {
	// Roots are the host directories walked (the project, the rw and
	// dev binds, the sandbox home).
	Roots []string
	// Layouts are the git directories found at start (a .git directory,
	// a bare repository: HEAD, objects/ and refs/), host paths.
	Layouts []string
	// Gitfiles are the directories holding a .git file at start.
	Gitfiles []string
	// Incomplete says what the start scan could not cover, "" if none.
	Incomplete string
}

// repoWalk is the result of walking one root.
type repoWalk struct {
	worktrees []string // directories holding a .git
	bare      []string // bare layouts not named .git
	layouts   []string // every git directory (.git dirs and bare)
	gitfiles  []string // directories whose .git is a file
	cut       []string // directories not listed (bound reached, or unreadable)
}

// scanBudget is shared by the walks of one start.
type scanBudget struct {
	entries  int
	dirs     int // listed so far
	deadline time.Time
	now      func() time.Time
}

// walkRepos lists root breadth first (the directory's own entry types,
// no stat per entry; symlinks are not followed) and finds every
// repository in it. Inside a git directory it does not descend into
// objects/ (loose objects and packs; git finds no repository there).
func walkRepos(h Host, root string, b *scanBudget) repoWalk {
	var w repoWalk
	queue := []string{root}
	for len(queue) > 0 {
		if b.entries <= 0 || b.dirs >= MinGitScanDirs && b.now().After(b.deadline) {
			w.cut = append(w.cut, queue...)
			return w
		}
		dir := queue[0]
		queue = queue[1:]
		ents, err := h.ReadDir(dir)
		if err != nil && len(ents) == 0 {
			if dir == root {
				return w // a file bound rw, or gone
			}
			w.cut = append(w.cut, dir)
			continue
		}
		b.entries -= len(ents)
		b.dirs++
		var head, objects, refs bool
		for _, e := range ents {
			switch n := e.Name(); {
			case n == "HEAD" && !e.IsDir():
				head = true
			case n == "objects" && e.IsDir():
				objects = true
			case n == "refs" && e.IsDir():
				refs = true
			case n == ".git" && e.Type()&fs.ModeSymlink == 0:
				w.worktrees = append(w.worktrees, dir)
				if !e.IsDir() {
					w.gitfiles = append(w.gitfiles, dir)
				}
			}
		}
		layout := head && objects && refs
		if layout {
			w.layouts = append(w.layouts, dir)
			if filepath.Base(dir) != ".git" {
				w.bare = append(w.bare, dir)
			}
		}
		for _, e := range ents {
			if !e.IsDir() || (layout && e.Name() == "objects") {
				continue
			}
			queue = append(queue, filepath.Join(dir, e.Name()))
		}
	}
	return w
}

// protectNested walks the root of guard g (host directory host) and
// protects every repository in it as protectGit protects the project's.
func (g *gitGuard) protectNested(w repoWalk) error {
	for _, wt := range w.worktrees {
		if err := g.repo(wt, 0); err != nil {
			return err
		}
	}
	for _, d := range w.bare {
		if filepath.Base(filepath.Dir(d)) == "modules" || g.protectedDir(d) {
			continue // a submodule's git directory, done with its repository
		}
		if err := g.readOnly(d); err != nil {
			return err
		}
		if err := g.c.repo(filepath.Dir(d), d, d); err != nil {
			return err
		}
	}
	return nil
}

// protectedDir reports whether p is already read-only in the plan.
func (g *gitGuard) protectedDir(p string) bool {
	for _, r := range g.ro {
		if p == r.host || under(p, r.host) {
			return true
		}
	}
	return false
}

// cutNotice is the line that names what the start scan did not cover.
func cutNotice(cut []string) string {
	if len(cut) == 0 {
		return ""
	}
	names := make([]string, 0, 3)
	for _, c := range cut[:min(3, len(cut))] {
		names = append(names, qt.String(c))
	}
	more := ""
	if len(cut) > 3 {
		more = fmt.Sprintf(" and %d more", len(cut)-3)
	}
	return fmt.Sprintf("git: the scan for repositories stopped at its bound (%d entries, %s) before %s%s: a repository there is not read-only inside, and at exit any repository there the session made or whose config or hooks it changed is made inert",
		MaxGitScanEntries, MaxGitScanTime, strings.Join(names, ", "), more)
}
