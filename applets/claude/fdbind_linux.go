package claude

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
	"github.com/claude-sandbox/claude-sandbox/internal/hostpath"
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
}

// bindError is a refused bind source: origin names the config line, if
// the op came from the config.
type bindError struct{ origin, msg string }

func (e *bindError) Error() string {
	if e.origin != "" {
		return e.origin + ": " + e.msg
	}
	return e.msg
}

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
	}
	var srcs []src
	out := &bound{roots: map[hostpath.ID]string{}}
	defer func() {
		for _, s := range srcs {
			s.r.Close()
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
		r, err := hostpath.Open(o.Src, !rule.noFollow)
		if err != nil {
			try := o.Kind == bwrap.ROBindTry || o.Kind == bwrap.BindTry || o.Kind == bwrap.DevBindTry
			if try && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, &bindError{o.Origin, fmt.Sprintf("bind source %s: %v", o.Src, err)}
		}
		srcs = append(srcs, src{len(ops), r})
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
	for _, s := range srcs {
		o := &ops[s.i]
		rule := b.rules[o.Src]
		if (o.IsWritable() || rule.exposeHome) && above[s.r.ID()] {
			return nil, &bindError{o.Origin, fmt.Sprintf("%s would expose your real home %s to the sandbox: name a directory of its own below it", o.Src, b.home)}
		}
		if err := out.checkHops(s.r); err != nil {
			return nil, &bindError{o.Origin, err.Error()}
		}
		if o.Kind == bwrap.DevBind || o.Kind == bwrap.DevBindTry {
			// bwrap mounts it by path: no directory on the path may be
			// one the agent can rename.
			if id, in, err := hostpath.Within(s.r.Parent, out.roots); err != nil {
				return nil, &bindError{o.Origin, fmt.Sprintf("bind source %s: %v", o.Src, err)}
			} else if in {
				return nil, &bindError{o.Origin, fmt.Sprintf("%s lies in %s, which the sandbox can write, and dev binds are made by path: name a path outside it", o.Src, out.roots[id])}
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

// checkHops refuses a resolved path that followed a symlink lying in a
// place the sandbox can write.
func (b *bound) checkHops(r *hostpath.Resolved) error {
	for _, h := range r.Hops {
		id, in, err := hostpath.Within(h.Dir, b.roots)
		if err != nil {
			return fmt.Errorf("%s: %v", h.Path, err)
		}
		if in {
			return fmt.Errorf("%s is a symlink in %s, which the sandbox can write: remove it (the agent may have made it) or name the real path", h.Path, b.roots[id])
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
		return nil, fmt.Errorf("your home %s: %v", home, err)
	}
	defer r.Close()
	if !r.IsDir() {
		return nil, fmt.Errorf("your home %s is not a directory: set HOME", home)
	}
	ids, err := hostpath.Ancestors(r.File)
	if err != nil {
		return nil, fmt.Errorf("your home %s: %v", home, err)
	}
	m := map[hostpath.ID]bool{}
	for _, id := range ids {
		m[id] = true
	}
	return m, nil
}
