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
}

// bound is the result of bindFromFDs: the fds to pass (the first at
// firstFD) and the identities of what the sandbox can write.
type bound struct {
	files []*os.File
	roots map[hostpath.ID]string
	// home is the real home's physical path: below it, outside its
	// dot-directories, any directory may have been the project of an
	// earlier sandbox ("" while unknown).
	home string
}

func (b *bound) Close() {
	for _, f := range b.files {
		f.Close()
	}
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
	}
	var srcs []src
	out := &bound{roots: map[hostpath.ID]string{}}
	defer func() {
		for _, s := range srcs {
			s.r.Close()
			s.parent.Close()
		}
		if err != nil {
			out.Close()
		}
	}()
	ops := p.Ops[:0:0]
	for _, o := range p.Ops {
		if !o.IsBind() {
			ops = append(ops, o)
			continue
		}
		rule := b.rules[o.Src]
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
		r, err := hostpath.Open(o.Src, !rule.noFollow)
		if err != nil {
			try := o.Kind == bwrap.ROBindTry || o.Kind == bwrap.BindTry || o.Kind == bwrap.DevBindTry
			if try && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, &bindError{o.Origin, fmt.Errorf("bind source %s: %w", quote.String(o.Src), err)}
		}
		srcs = append(srcs, src{i: len(ops), r: r})
		ops = append(ops, o)
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
		if r, err := hostpath.Open(w, true); err == nil {
			if _, ok := out.roots[r.ID()]; !ok {
				out.roots[r.ID()] = w
			}
			r.Close()
		}
	}

	above, err := homeAndAbove(b.home)
	if err != nil {
		return nil, err
	}
	if hr, err := hostpath.Open(b.home, true); err == nil {
		out.home = hr.Path
		hr.Close()
	}
	for k := range srcs {
		s := &srcs[k]
		o := &ops[s.i]
		rule := b.rules[o.Src]
		if s.r == nil {
			// Nothing is created through a link the agent planted.
			if err := out.checkHops(s.parent); err != nil {
				return nil, &bindError{o.Origin, err}
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
		if o.Kind == bwrap.DevBind || o.Kind == bwrap.DevBindTry {
			// bwrap mounts it by path: no directory on the path may be
			// one the agent can rename.
			if id, in, err := hostpath.Within(s.r.Parent, out.roots); err != nil {
				return nil, &bindError{o.Origin, fmt.Errorf("bind source %s: %w", quote.String(o.Src), err)}
			} else if in {
				return nil, &bindError{o.Origin, fmt.Errorf("%s lies in %s, which the sandbox can write, and dev binds are made by path: name a path outside it", quote.String(o.Src), quote.String(out.roots[id]))}
			}
			o.Src = s.r.Path
			continue
		}
		o.SrcFD = firstFD + len(out.files)
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
		o.SrcFD = firstFD + len(b.files)
		b.files = append(b.files, f)
	}
	return nil
}

// checkHops refuses a resolved path that followed a symlink lying in a
// place the sandbox can write.
func (b *bound) checkHops(r *hostpath.Resolved) error {
	for _, h := range r.Hops {
		id, in, err := hostpath.Within(h.Dir, b.roots)
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
	id, in, err := hostpath.Within(r.Parent, b.roots)
	if err != nil || !in {
		return "", err
	}
	return b.roots[id], nil
}

// homeAndAbove returns the identities of the real home and of every
// directory above it.
func homeAndAbove(home string) (map[hostpath.ID]bool, error) {
	r, err := hostpath.Open(home, true)
	if err != nil {
		return nil, fmt.Errorf("your home %s: %w", quote.String(home), err)
	}
	defer r.Close()
	if !r.IsDir() {
		return nil, fmt.Errorf("your home %s is not a directory: set HOME", quote.String(home))
	}
	ids, err := hostpath.Ancestors(r.File)
	if err != nil {
		return nil, fmt.Errorf("your home %s: %w", quote.String(home), err)
	}
	m := map[hostpath.ID]bool{}
	for _, id := range ids {
		m[id] = true
	}
	return m, nil
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
