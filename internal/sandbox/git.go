package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
	qt "github.com/claude-sandbox/claude-sandbox/internal/quote"
)

// Git on the host executes what a repository's .git names: hooks,
// core.fsmonitor, core.hooksPath, include.path, filter drivers,
// core.sshCommand, and for a .git file or commondir another directory's
// all of these. A repository the sandbox can write is therefore turned
// read-only where git reads it: its .git (directory or file), the git
// directory a .git file names and its commondir when they lie in the same
// writable mount (elsewhere they are bound read-only at their paths, so git
// works inside a linked worktree: worktree.go), every submodule's .git (git status runs git in each
// submodule), and the .git file of each linked worktree in the mount. Each protected path is a mount point inside, so it cannot be
// renamed or removed either (EBUSY); the directories between the mount's
// root and it are bound onto themselves for the same reason, so that no
// parent can be renamed away and replaced by one holding a .git of the
// agent's.

// maxSubmoduleDepth bounds submodules of submodules.
const maxSubmoduleDepth = 8

// The bounds of what Host.ReadFile reads of files the sandbox may have
// written, checked on the opened file before any read: a sparse file of a
// gigabyte costs no disk to the agent and would cost the launcher its
// memory and seconds at every start.
const (
	// MaxIndexEntries is the most entries of a git index the launcher
	// reads (a repository of Chromium's size has half a million).
	MaxIndexEntries = 1 << 20
	// maxIndexEntryBytes bounds an entry's size on average: its fixed
	// part (at most 74 bytes) and a name of a path as work trees have them.
	maxIndexEntryBytes = 160
	// MaxGitIndex is the largest git index read: MaxIndexEntries of
	// maxIndexEntryBytes, its extensions included.
	MaxGitIndex = MaxIndexEntries * maxIndexEntryBytes
	// MaxGitConfig is the largest git config file read: they are text
	// of a few kilobytes.
	MaxGitConfig = 1 << 20
	// MaxGitFile is the largest .git file, commondir or gitdir read: one
	// path.
	MaxGitFile = 1 << 16
	// MaxSettingsFile is the largest settings or certificate file of a
	// toolchain read.
	MaxSettingsFile = 4 << 20
)

// TooLargeError is Host.ReadFile's error for a file over its bound.
type TooLargeError struct{ Size, Max int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%d bytes, more than the %d read", e.Size, e.Max)
}

// protectGit keeps every repository at the root of a directory the sandbox
// can write (the project, the config's rw and dev binds) from being turned
// against the host. It looks at the plan as the defaults, the project and
// the config made it, and appends to it.
func (l *Launch) protectGit(h Host, s Spec, pp projectPlan) error {
	base := len(l.Plan.Ops)
	type root struct{ host, inside string }
	var roots []root
	if pp.Dir != "" {
		roots = append(roots, root{pp.Dir, pp.Dir})
	}
	for _, o := range l.Plan.Ops {
		if writableBind(o) && !(o.Src == s.Tmp && o.Dest == "/tmp") {
			roots = append(roots, root{o.Src, o.Dest})
		}
	}
	seen := map[string]bool{}
	var targets []roTarget
	c := &gitConsult{l: l, h: h, s: s, base: base, read: map[string][]gitNamed{}}
	if err := c.readGlobal(); err != nil {
		return err
	}
	budget := &scanBudget{entries: MaxGitScanEntries, deadline: time.Now().Add(MaxGitScanTime), now: time.Now}
	scan := &GitScan{}
	var cut []string
	for _, r := range roots {
		if seen[r.inside] {
			continue
		}
		seen[r.inside] = true
		i, rel := l.covering(r.inside, base)
		if i < 0 {
			continue
		}
		o := l.Plan.Ops[i]
		if !writableBind(o) || filepath.Join(o.Src, rel) != r.host {
			continue // not writable there, or another host path
		}
		g := &gitGuard{l: l, h: h, s: s, src: o.Src, dest: o.Dest, base: base, seen: map[string]bool{}, c: c}
		c.guards = append(c.guards, g)
		if err := g.repo(r.host, 0); err != nil {
			return err
		}
		// Every repository below, at any depth (nestedgit.go).
		w := walkRepos(h, r.host, budget)
		if err := g.protectNested(w); err != nil {
			return err
		}
		scan.Roots = append(scan.Roots, r.host)
		scan.Layouts = append(scan.Layouts, w.layouts...)
		scan.Gitfiles = append(scan.Gitfiles, w.gitfiles...)
		cut = append(cut, w.cut...)
		targets = append(targets, g.ro...)
	}
	if scan.Incomplete = cutNotice(cut); scan.Incomplete != "" {
		l.Notices = append(l.Notices, scan.Incomplete)
	}
	l.GitScan = scan
	l.appendReadOnly(base, append(targets, c.ro...))
	l.appendExposed(c)
	return l.useAgentGit(h, s, pp, base)
}

// roTarget is a host path to bind read-only onto itself inside, and the
// op (its index) that makes it writable there.
type roTarget struct {
	host, inside string
	mount        int
	// why names the config entry that names it, "" for a .git.
	why string
}

// appendReadOnly binds the targets read-only. First it binds each
// directory between a target and the root of its writable mount onto
// itself, shallowest first, so that none can be renamed (a mount point
// cannot be); bwrap binds from the host, so the ops of the plan below such
// a directory that came after its mount are then applied again; then the
// targets.
func (l *Launch) appendReadOnly(base int, targets []roTarget) {
	type pin struct {
		host, inside string
		mount        int
	}
	pins := map[string]pin{}
	for _, t := range targets {
		o := l.Plan.Ops[t.mount]
		rel, _ := relTo(t.inside, o.Dest)
		parts := strings.Split(rel, "/")
		for k := 1; k < len(parts); k++ {
			r := filepath.Join(parts[:k]...)
			in := filepath.Join(o.Dest, r)
			if p, ok := pins[in]; !ok || t.mount < p.mount {
				pins[in] = pin{filepath.Join(o.Src, r), in, t.mount}
			}
		}
	}
	order := make([]string, 0, len(pins))
	for in := range pins {
		order = append(order, in)
	}
	sort.Slice(order, func(i, j int) bool {
		di, dj := strings.Count(order[i], "/"), strings.Count(order[j], "/")
		if di != dj {
			return di < dj
		}
		return order[i] < order[j]
	})
	for _, in := range order {
		p := pins[in]
		l.Plan.Ops = append(l.Plan.Ops, bwrap.Op{Kind: bwrap.Bind, Src: p.host, Dest: p.inside})
	}
	for j := 0; j < base; j++ {
		o := l.Plan.Ops[j]
		if o.Kind == bwrap.Raw || o.Kind == bwrap.Setenv || o.Kind == bwrap.Unsetenv {
			continue
		}
		for _, in := range order {
			if p := pins[in]; p.mount < j && (o.Dest == in || under(o.Dest, in)) {
				l.Plan.Ops = append(l.Plan.Ops, o)
				break
			}
		}
	}
	var done []string
next:
	for _, t := range targets {
		for _, d := range done {
			if t.inside == d || under(t.inside, d) {
				continue next
			}
		}
		done = append(done, t.inside)
		l.Plan.Ops = append(l.Plan.Ops, bwrap.Op{Kind: bwrap.ROBind, Src: t.host, Dest: t.inside})
		if t.why != "" {
			l.Notes = append(l.Notes, "git: "+qt.String(t.host)+" read-only (host git reads or runs it: "+t.why+")")
			continue
		}
		l.Notes = append(l.Notes, "git: "+qt.String(t.host)+" read-only (host git reads it; git commit fails inside)")
	}
}

func writableBind(o bwrap.Op) bool {
	switch o.Kind {
	case bwrap.Bind, bwrap.BindTry, bwrap.DevBind, bwrap.DevBindTry:
		return true
	}
	return false
}

// gitGuard protects the repositories in one writable mount: host
// directory src, bound at dest.
type gitGuard struct {
	l         *Launch
	h         Host
	s         Spec
	src, dest string
	base      int             // the plan's ops before protectGit
	ro        []roTarget      // what to make read-only
	seen      map[string]bool // work trees done
	c         *gitConsult     // what git consults beyond .git
}

func (g *gitGuard) fail(format string, args ...any) error {
	return fmt.Errorf(format+": the sandbox cannot keep git from running what the agent writes; fix it or add `project ro` (or drop the rw bind) in %s", append(args, g.s.ConfigName)...)
}

// repo protects the repository whose work tree is wt (a host path in the
// mount).
func (g *gitGuard) repo(wt string, depth int) error {
	if g.seen[wt] {
		return nil
	}
	g.seen[wt] = true
	if fi, err := g.h.Lstat(wt); err != nil || !fi.IsDir() {
		return nil // a file or device bound rw: no work tree
	}
	dotgit := filepath.Join(wt, ".git")
	fi, err := g.h.Lstat(dotgit)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return g.fail("%s: %v", qt.String(dotgit), err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return g.fail("%s is a symlink", qt.String(dotgit))
	}
	if err := g.readOnly(dotgit); err != nil {
		return err
	}
	gitdir := dotgit
	if !fi.IsDir() {
		// A .git file: "gitdir: PATH" (a linked worktree, a submodule,
		// git init --separate-git-dir).
		b, err := g.h.ReadFile(dotgit, MaxGitFile)
		if err != nil {
			return g.fail("%s: %v", qt.String(dotgit), err)
		}
		line, _, _ := strings.Cut(string(b), "\n")
		p, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
		p = strings.TrimSpace(p)
		if !ok || p == "" {
			return nil // not a repository to git either
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(wt, p)
		}
		gitdir = filepath.Clean(p)
		if err := g.readOnlyIfInside(gitdir); err != nil {
			return err
		}
	}
	common := gitdir
	if b, err := g.h.ReadFile(filepath.Join(gitdir, "commondir"), MaxGitFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return g.fail("%s: %v", qt.String(filepath.Join(gitdir, "commondir")), err)
	} else if err == nil {
		p := strings.TrimSpace(string(b))
		if !filepath.IsAbs(p) {
			p = filepath.Join(gitdir, p)
		}
		common = filepath.Clean(p)
		if err := g.readOnlyIfInside(common); err != nil {
			return err
		}
		if err := g.exposeWorktree(dotgit, gitdir, common); err != nil {
			return err
		}
	}
	if err := g.c.repo(wt, gitdir, common); err != nil {
		return err
	}
	if depth >= maxSubmoduleDepth {
		return nil
	}
	// Linked worktrees in the mount: git run there reads their .git
	// file, which the agent could point at a git directory of its own.
	wts, _ := g.h.Glob(filepath.Join(globQuote(common), "worktrees", "*", "gitdir"))
	for _, f := range wts {
		b, err := g.h.ReadFile(f, MaxGitFile)
		if err != nil {
			return g.fail("%s: %v", qt.String(f), err)
		}
		p := filepath.Clean(strings.TrimSpace(string(b)))
		if filepath.IsAbs(p) && filepath.Base(p) == ".git" && under(p, g.src) {
			if err := g.repo(filepath.Dir(p), depth+1); err != nil {
				return err
			}
		}
	}
	index := filepath.Join(gitdir, "index")
	b, err := g.h.ReadFile(index, MaxGitIndex)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if tl := (*TooLargeError)(nil); errors.As(err, &tl) {
		return fmt.Errorf("%s: a git index of %d bytes, more than one of %d entries takes (%d), not read: remove this file (in a repository of yours, git reset makes it anew)", qt.String(index), tl.Size, MaxIndexEntries, tl.Max)
	}
	if err != nil {
		return g.fail("%s: %v", qt.String(index), err)
	}
	subs, err := gitlinks(b)
	if err != nil && !errors.Is(err, errSplitIndex) {
		// The agent may have made it (a new sub/.git): say which file
		// to remove.
		return fmt.Errorf("%s: %w: remove this file (in a repository of yours, git reset makes it anew)", qt.String(index), err)
	}
	if err != nil {
		return g.fail("%s: %v", qt.String(index), err)
	}
	for _, sub := range subs {
		if err := g.submodule(wt, sub, depth); err != nil {
			return err
		}
	}
	return nil
}

// submodule protects the submodule at path sub of work tree wt: its .git,
// or the whole directory while it has none (so the agent cannot make one).
func (g *gitGuard) submodule(wt, sub string, depth int) error {
	if !filepath.IsLocal(sub) {
		return g.fail("%s: submodule path %s leaves the work tree", qt.String(wt), strconv.Quote(sub))
	}
	dir := filepath.Join(wt, sub)
	if err := g.noSymlinks(dir); err != nil {
		return err
	}
	fi, err := g.h.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return g.fail("submodule %s is missing (run git submodule update or git checkout -- %s on the host)", qt.String(dir), qt.String(sub))
	case err != nil:
		return g.fail("submodule %s: %v", qt.String(dir), err)
	case !fi.IsDir():
		return g.fail("submodule %s is not a directory", qt.String(dir))
	}
	if _, err := g.h.Lstat(filepath.Join(dir, ".git")); errors.Is(err, fs.ErrNotExist) {
		return g.readOnly(dir)
	}
	return g.repo(dir, depth+1)
}

// readOnlyIfInside makes p read-only if it lies in the mount; elsewhere
// the sandbox does not see it.
func (g *gitGuard) readOnlyIfInside(p string) error {
	if p != g.src && !under(p, g.src) {
		return nil
	}
	if _, err := g.h.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return g.readOnly(p)
}

// readOnly records host path p (in the mount) to be bound read-only onto
// itself inside, if it is writable there.
func (g *gitGuard) readOnly(p string) error {
	for _, r := range g.ro {
		if p == r.host || under(p, r.host) {
			return nil
		}
	}
	if err := g.noSymlinks(p); err != nil {
		return err
	}
	rel, err := filepath.Rel(g.src, p)
	if err != nil || rel == "." || !filepath.IsLocal(rel) {
		return g.fail("%s is not below %s", qt.String(p), qt.String(g.src))
	}
	inside := filepath.Join(g.dest, rel)
	i, r := g.l.covering(inside, g.base)
	if i < 0 {
		return nil
	}
	if o := g.l.Plan.Ops[i]; !writableBind(o) || filepath.Join(o.Src, r) != p {
		return nil // not writable inside, or not this host path
	}
	g.ro = append(g.ro, roTarget{host: p, inside: inside, mount: i})
	return nil
}

// noSymlinks checks that no component of p below the mount's root is a
// symlink: bwrap would follow it.
func (g *gitGuard) noSymlinks(p string) error {
	rel, err := filepath.Rel(g.src, p)
	if err != nil || !filepath.IsLocal(rel) {
		return nil
	}
	cur := g.src
	for _, c := range strings.Split(rel, string(filepath.Separator)) {
		cur = filepath.Join(cur, c)
		fi, err := g.h.Lstat(cur)
		if err != nil {
			return nil
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return g.fail("%s is a symlink in %s, which the sandbox can write (the agent may have made it)", qt.String(cur), qt.String(g.src))
		}
	}
	return nil
}

// globQuote quotes the pattern characters of a path for Glob.
func globQuote(p string) string {
	var b strings.Builder
	for _, c := range p {
		switch c {
		case '*', '?', '[', '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}
