package claude

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
	"github.com/claude-sandbox/claude-sandbox/internal/hostpath"
	"github.com/claude-sandbox/claude-sandbox/internal/quote"
	"github.com/claude-sandbox/claude-sandbox/internal/sandbox"
)

// A bind is made from an fd the launcher opened and checked: bwrap 0.8.0
// --bind-fd/--ro-bind-fd bind what the fd is and stop with "Race condition
// binding dirfd" when the path they mount by has been swapped since. Names
// are never trusted: every source is walked component by component with
// O_NOFOLLOW (hostpath), a symlink on the way is followed only when it lies
// outside every place the sandbox can write, and the checks run on the fds.

// srcRule is what the launcher checks on one of its own sources (sandbox
// home, private tmp, agent directory) beyond what every source gets.
type srcRule struct {
	// noFollow: a symlink as the final component is opened itself (and
	// check refuses it).
	noFollow bool
	// exposeHome refuses the real home or a directory above it whatever
	// the op's kind (writable binds always get it).
	exposeHome bool
	check      func(r *hostpath.Resolved) error
	// create makes the directory (0700) when it is missing, in its parent
	// as opened, once the parent is checked (checkParent) and no symlink
	// on the way lies where the sandbox can write. name names it in
	// messages.
	create      bool
	checkParent func(parent *hostpath.Resolved) error
	name        string
	// parent, with create, is the rule of the directory that holds this
	// one (CLAUDE_SBX_TMP's, which holds each project's /tmp): it is
	// checked, or made when missing, the same way first.
	parent *srcRule
}

// bindError is a refused bind source: origin names the config line, if
// the op came from the config.
type bindError struct {
	origin string
	err    error
}

func (e *bindError) Error() string {
	if e.origin != "" {
		return e.origin + ": " + e.err.Error()
	}
	return e.err.Error()
}

func (e *bindError) Unwrap() error { return e.err }

// binder opens the plan's bind sources.
type binder struct {
	// home is the real home.
	home string
	// writable are host paths the sandbox can write besides the plan's
	// writable binds (sandbox.Launch.Writable).
	writable []string
	rules    map[string]srcRule
	// early are sources opened before the plan was made (earlyOpen), by
	// path; bindFromFDs takes those it binds and closes the others.
	early *earlyOpens
}

// bound is the result of bindFromFDs: the fds to pass (the first at
// firstFD) and the identities of what the sandbox can write.
type bound struct {
	files []*os.File
	// ids are the identities of files, as checked (same order): start
	// compares them again before the fork (sameFiles).
	ids   []hostpath.ID
	roots map[hostpath.ID]string
	// home is the real home's physical path: below it, outside its
	// dot-directories, any directory may have been the project of an
	// earlier sandbox ("" while unknown).
	home string
	// above holds hostpath.Ancestors of each directory walked up from,
	// keyed by the directory and the mount it was reached through (the
	// same directory mounted elsewhere has other directories above it):
	// the hops of one start lie in few directories (/etc), each walked up
	// once.
	above map[dirKey][]hostpath.ID
}

// dirKey is a directory as reached through one mount.
type dirKey struct {
	mnt uint64
	id  hostpath.ID
}

// keyOf returns the key of the directory dir, false when the kernel does
// not tell the mount (before 5.8): then nothing is remembered.
func keyOf(dir *os.File) (dirKey, bool) {
	var stx unix.Statx_t
	if err := unix.Statx(int(dir.Fd()), "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_INO|unix.STATX_MNT_ID, &stx); err != nil || stx.Mask&unix.STATX_MNT_ID == 0 {
		return dirKey{}, false
	}
	return dirKey{stx.Mnt_id, hostpath.ID{Dev: unix.Mkdev(stx.Dev_major, stx.Dev_minor), Ino: stx.Ino}}, true
}

func (b *bound) Close() {
	for _, f := range b.files {
		f.Close()
	}
	b.files, b.ids = nil, nil
}

// closeBut closes the fds but those modes holds.
func (b *bound) closeBut(modes rootModes) {
	keep := map[*os.File]bool{}
	for _, m := range modes {
		keep[m.f] = true
	}
	var kept []*os.File
	var ids []hostpath.ID
	for i, f := range b.files {
		if keep[f] {
			kept = append(kept, f)
			ids = append(ids, b.ids[i])
		} else {
			f.Close()
		}
	}
	b.files, b.ids = kept, ids
}

// bindFromFDs opens every bind source of p, checks it and rewrites its op
// to bind from the fd, numbered from firstFD. A -try op whose source does
// not exist is dropped. Dev binds (bwrap has no --dev-bind-fd) are made by
// the physical path, and only when no directory on it lies where the
// sandbox can write.
func (b binder) bindFromFDs(p *bwrap.Plan, firstFD int) (_ *bound, err error) {
	type src struct {
		i int
		r *hostpath.Resolved
		// parent is set, and r nil, for a directory still to create.
		parent *hostpath.Resolved
		// mkParent: parent is the grandparent, and the parent is to be
		// made in it first (by the rule's parent rule).
		mkParent bool
	}
	var srcs []src
	out := &bound{roots: map[hostpath.ID]string{}}
	pre := b.preopen(p.Ops)
	defer b.early.close()
	defer func() {
		for _, s := range srcs {
			s.r.Close()
			s.parent.Close()
		}
		for _, o := range pre {
			o.r.Close()
		}
		if err != nil {
			out.Close()
		}
	}()
	ops := p.Ops[:0:0]
	// The identities of the sources opened following a final symlink, by
	// path: a writable path below that is one of them is not opened again.
	opened := map[string]hostpath.ID{}
	for k, o := range p.Ops {
		if !o.IsBind() {
			ops = append(ops, o)
			continue
		}
		rule := b.rules[o.Src]
		if rule.create && rule.parent != nil {
			dir := filepath.Dir(o.Src)
			gp, pr, err := openOrParent(dir, *rule.parent)
			if err != nil {
				return nil, err
			}
			if pr == nil {
				srcs = append(srcs, src{i: len(ops), parent: gp, mkParent: true})
				ops = append(ops, o)
				continue
			}
			err = rule.parent.check(pr)
			if err == nil && rule.checkParent != nil {
				err = rule.checkParent(pr)
			}
			var r *hostpath.Resolved
			if err == nil {
				r, err = pr.Child(filepath.Base(o.Src))
			}
			if errors.Is(err, fs.ErrNotExist) {
				srcs = append(srcs, src{i: len(ops), parent: pr})
				ops = append(ops, o)
				continue
			}
			pr.Close()
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", rule.name, quote.String(o.Src), err)
			}
			srcs = append(srcs, src{i: len(ops), r: r})
			ops = append(ops, o)
			if err := rule.check(r); err != nil {
				return nil, err
			}
			out.roots[r.ID()] = o.Src
			continue
		}
		if rule.create {
			parent, r, err := openOrParent(o.Src, rule)
			if err != nil {
				return nil, err
			}
			if r == nil {
				srcs = append(srcs, src{i: len(ops), parent: parent})
				ops = append(ops, o)
				continue
			}
			srcs = append(srcs, src{i: len(ops), r: r})
			ops = append(ops, o)
			if err := rule.check(r); err != nil {
				return nil, err
			}
			out.roots[r.ID()] = o.Src
			continue
		}
		r, err := pre[k].r, pre[k].err
		pre[k].r = nil
		if err != nil {
			try := o.Kind == bwrap.ROBindTry || o.Kind == bwrap.BindTry || o.Kind == bwrap.DevBindTry
			if try && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, &bindError{o.Origin, fmt.Errorf("bind source %s: %w", quote.String(o.Src), err)}
		}
		srcs = append(srcs, src{i: len(ops), r: r})
		ops = append(ops, o)
		if !rule.noFollow {
			opened[o.Src] = r.ID()
		}
		if rule.check != nil {
			if err := rule.check(r); err != nil {
				return nil, err
			}
		}
		if o.IsWritable() {
			out.roots[r.ID()] = o.Src
		}
	}
	for _, w := range b.writable {
		id, ok := opened[w]
		if !ok {
			r, err := hostpath.Open(w, true)
			if err != nil {
				continue
			}
			id = r.ID()
			r.Close()
		}
		if _, ok := out.roots[id]; !ok {
			out.roots[id] = w
		}
	}

	above, homePath, err := out.homeAndAbove(b.home)
	if err != nil {
		return nil, err
	}
	out.home = homePath
	for k := range srcs {
		s := &srcs[k]
		o := &ops[s.i]
		rule := b.rules[o.Src]
		if s.r == nil {
			// Nothing is created through a link the agent planted.
			if err := out.checkHops(s.parent); err != nil {
				return nil, &bindError{o.Origin, err}
			}
			if s.mkParent {
				pr, err := createDir(s.parent, filepath.Dir(o.Src), *rule.parent)
				if err != nil {
					return nil, err
				}
				s.parent.Close()
				s.parent = pr
			}
			r, err := createDir(s.parent, o.Src, rule)
			if err != nil {
				return nil, err
			}
			s.r = r
			out.roots[r.ID()] = o.Src
		}
		if (o.IsWritable() || rule.exposeHome) && above[s.r.ID()] {
			return nil, &bindError{o.Origin, fmt.Errorf("%s would expose your real home %s to the sandbox: name a directory of its own below it", quote.String(o.Src), quote.String(b.home))}
		}
		if err := out.checkHops(s.r); err != nil {
			return nil, &bindError{o.Origin, err}
		}
		if devBind(*o) {
			// bwrap mounts it by path: no directory on the path may be
			// one the agent can rename.
			if id, in, err := out.within(s.r.Parent()); err != nil {
				return nil, &bindError{o.Origin, fmt.Errorf("bind source %s: %w", quote.String(o.Src), err)}
			} else if in {
				return nil, &bindError{o.Origin, fmt.Errorf("%s lies in %s, which the sandbox can write, and dev binds are made by path: name a path outside it", quote.String(o.Src), quote.String(out.roots[id]))}
			}
			o.Src = s.r.Path
			continue
		}
		o.SrcFD = firstFD + len(out.files)
		out.ids = append(out.ids, s.r.ID())
		out.files = append(out.files, s.r.TakeFile())
	}
	p.Ops = ops
	return out, nil
}

// addData puts the content of each file the launcher generates (ROData:
// a toolchain's settings without credentials) in a sealed memfd, numbered
// after the bind fds from firstFD; bwrap copies it into a file of its own
// and binds that read-only at the op's destination.
func (b *bound) addData(p *bwrap.Plan, firstFD int) error {
	for i := range p.Ops {
		o := &p.Ops[i]
		if o.Kind != bwrap.ROData {
			continue
		}
		f, err := sealedMemfd("data", o.Data)
		if err != nil {
			return fmt.Errorf("%s: %w", quote.String(o.Dest), err)
		}
		id, err := fileID(f)
		if err != nil {
			f.Close()
			return fmt.Errorf("%s: %w", quote.String(o.Dest), err)
		}
		o.SrcFD = firstFD + len(b.files)
		b.ids = append(b.ids, id)
		b.files = append(b.files, f)
	}
	return nil
}

// fileID returns the identity of the open file f.
func fileID(f *os.File) (hostpath.ID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return hostpath.ID{}, os.NewSyscallError("fstat", err)
	}
	return hostpath.ID{Dev: uint64(st.Dev), Ino: st.Ino}, nil
}

// sameFiles refuses to go on when an fd to be handed to bwrap is no
// longer the file that was checked: closed by number elsewhere in the
// launcher (a double close) and its number taken by another file, bwrap
// would bind what nobody checked.
func (b *bound) sameFiles() error {
	for i, f := range b.files {
		id, err := fileID(f)
		if err == nil && id != b.ids[i] {
			err = errors.New("another file has its number")
		}
		if err != nil {
			return fmt.Errorf("the fd of bind source %d (%s) is not the file that was checked: %v: refusing to start (a bug of the launcher: report it)", i, quote.String(f.Name()), err)
		}
	}
	return nil
}

// opening is a source opened by preopen.
type opening struct {
	r   *hostpath.Resolved
	err error
}

// preopen opens the source of each bind of ops that is opened as it is
// (not created by the launcher) as bindFromFDs would, in ops' order, on
// two threads: the opens are independent, and every check runs on the
// fds afterwards, in order. A source opened early (earlyOpen) is taken
// from there. Sources not opened here have a zero entry.
func (b binder) preopen(ops []bwrap.Op) []opening {
	out := make([]opening, len(ops))
	var todo []int
	early := b.early.wait()
	for i, o := range ops {
		rule := b.rules[o.Src]
		if !o.IsBind() || rule.create {
			continue
		}
		// earlyOpen keeps no parents, which a dev bind's check needs.
		if e, ok := early[o.Src]; ok && !rule.noFollow && !devBind(o) {
			out[i] = e
			delete(early, o.Src)
			continue
		}
		todo = append(todo, i)
	}
	open := func(part int) {
		for j, i := range todo {
			if j%2 == part {
				out[i].r, out[i].err = hostpath.Open(ops[i].Src, !b.rules[ops[i].Src].noFollow)
				if out[i].err == nil && !devBind(ops[i]) {
					out[i].r.CloseParent()
				}
			}
		}
	}
	if len(todo) < 8 {
		open(0)
		open(1)
		return out
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		open(1)
	}()
	open(0)
	<-done
	return out
}

// devBind reports whether o is a dev bind, made by path: its check needs
// the source's parent (bindFromFDs); every other bind needs only the fd.
func devBind(o bwrap.Op) bool { return o.Kind == bwrap.DevBind || o.Kind == bwrap.DevBindTry }

// earlyOpens are bind sources opened while the launcher plans.
type earlyOpens struct {
	done chan struct{}
	m    map[string]opening
}

// earlyOpen opens the plan's system sources (sandbox.SystemSources) on a
// thread of their own, as bindFromFDs would (following a final symlink):
// the plan takes a few milliseconds of one thread, and these opens do not
// depend on it. A source the plan does not bind is closed unused.
func earlyOpen() *earlyOpens {
	e := &earlyOpens{done: make(chan struct{}), m: map[string]opening{}}
	go func() {
		defer close(e.done)
		for _, p := range sandbox.SystemSources() {
			var o opening
			if o.r, o.err = hostpath.Open(p, true); o.err == nil {
				o.r.CloseParent()
			}
			e.m[p] = o
		}
	}()
	return e
}

// wait returns the sources opened early, nil for none; the caller takes
// what it uses out of the map.
func (e *earlyOpens) wait() map[string]opening {
	if e == nil {
		return nil
	}
	<-e.done
	return e.m
}

// close closes the sources not taken.
func (e *earlyOpens) close() {
	for p, o := range e.wait() {
		o.r.Close()
		delete(e.m, p)
	}
}

// checkHops refuses a resolved path that followed a symlink lying in a
// place the sandbox can write.
func (b *bound) checkHops(r *hostpath.Resolved) error {
	for _, h := range r.Hops {
		id, in, err := b.within(h.Dir)
		if err != nil {
			return fmt.Errorf("%s: %w", quote.String(h.Path), err)
		}
		if in {
			return fmt.Errorf("%s is a symlink in %s, which the sandbox can write: remove it (the agent may have made it) or name the real path", quote.String(h.Path), quote.String(b.roots[id]))
		}
		// The default project is any directory below the home but its
		// dot-directories: an earlier sandbox may have written there.
		if rel, ok := strings.CutPrefix(filepath.Dir(h.Path), b.home+"/"); ok && b.home != "" && !strings.HasPrefix(rel, ".") {
			top, _, _ := strings.Cut(rel, "/")
			return fmt.Errorf("%s is a symlink in %s, which an earlier sandbox may have written as its project: remove it (the agent may have made it) or name the real path", quote.String(h.Path), quote.String(filepath.Join(b.home, top)))
		}
	}
	return nil
}

// inWritable returns the writable mount that holds the entry r (or is r),
// or "" if none.
func (b *bound) inWritable(r *hostpath.Resolved) (string, error) {
	if w, ok := b.roots[r.ID()]; ok {
		return w, nil
	}
	id, in, err := b.within(r.Parent())
	if err != nil || !in {
		return "", err
	}
	return b.roots[id], nil
}

// within returns the first directory of roots that dir is or lies in, as
// hostpath.Within does, walking up from each directory once per start.
func (b *bound) within(dir *os.File) (hostpath.ID, bool, error) {
	k, known := keyOf(dir)
	anc, ok := b.above[k]
	if !known || !ok {
		var err error
		if anc, err = hostpath.Ancestors(dir); err != nil {
			return hostpath.ID{}, false, err
		}
		b.remember(k, known, anc)
	}
	for _, a := range anc {
		if _, ok := b.roots[a]; ok {
			return a, true, nil
		}
	}
	return hostpath.ID{}, false, nil
}

// remember keeps anc, the walk up from the directory of key k (known
// says whether k is).
func (b *bound) remember(k dirKey, known bool, anc []hostpath.ID) {
	if !known {
		return
	}
	if b.above == nil {
		b.above = map[dirKey][]hostpath.ID{}
	}
	b.above[k] = anc
}

// homeAndAbove returns the identities of the real home and of every
// directory above it, and the home's physical path.
func (b *bound) homeAndAbove(home string) (map[hostpath.ID]bool, string, error) {
	r, err := hostpath.Open(home, true)
	if err != nil {
		return nil, "", fmt.Errorf("your home %s: %w", quote.String(home), err)
	}
	defer r.Close()
	if !r.IsDir() {
		return nil, "", fmt.Errorf("your home %s is not a directory: set HOME", quote.String(home))
	}
	ids, err := hostpath.Ancestors(r.File)
	if err != nil {
		return nil, "", fmt.Errorf("your home %s: %w", quote.String(home), err)
	}
	k, known := keyOf(r.File)
	b.remember(k, known, ids)
	m := map[hostpath.ID]bool{}
	for _, id := range ids {
		m[id] = true
	}
	return m, r.Path, nil
}

// openOrParent opens the parent of path and runs rule.checkParent on it,
// then opens path in it without following a symlink. r is nil when path
// does not exist yet.
func openOrParent(path string, rule srcRule) (parent, r *hostpath.Resolved, err error) {
	parent, err = hostpath.Open(filepath.Dir(path), true)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", rule.name, quote.String(path), err)
	}
	if rule.checkParent != nil {
		if err := rule.checkParent(parent); err != nil {
			parent.Close()
			return nil, nil, err
		}
	}
	r, err = parent.Child(filepath.Base(path))
	if errors.Is(err, fs.ErrNotExist) {
		return parent, nil, nil
	}
	parent.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", rule.name, quote.String(path), err)
	}
	return nil, r, nil
}

// createDir makes path (0700) in parent, opens it there and checks it.
func createDir(parent *hostpath.Resolved, path string, rule srcRule) (*hostpath.Resolved, error) {
	base := filepath.Base(path)
	made := true
	if err := unix.Mkdirat(int(parent.File.Fd()), base, 0o700); errors.Is(err, unix.EEXIST) {
		made = false
	} else if err != nil {
		return nil, fmt.Errorf("%s %s: mkdir: %w", rule.name, quote.String(path), err)
	}
	r, err := parent.Child(base)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", rule.name, quote.String(path), err)
	}
	if made && r.IsDir() {
		// Whatever the umask: through the fd, so exactly what was made.
		if err := os.Chmod(fmt.Sprintf("/proc/self/fd/%d", r.File.Fd()), 0o700); err != nil {
			r.Close()
			return nil, fmt.Errorf("%s %s: %w", rule.name, quote.String(path), err)
		}
		if err := unix.Fstat(int(r.File.Fd()), &r.Stat); err != nil {
			r.Close()
			return nil, fmt.Errorf("%s %s: %w", rule.name, quote.String(path), err)
		}
	}
	if err := rule.check(r); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}
