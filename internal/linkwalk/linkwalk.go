// Package linkwalk follows the symbolic links of a host path one component
// at a time, through a Host that can only Lstat and Readlink, so that the
// caller sees every link on the way: the launcher's plans decide on each
// (a link the sandbox could have made is not followed), where a resolver
// such as filepath.EvalSymlinks would hide them.
package linkwalk

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
)

// Host is what Walk asks about the machine.
type Host interface {
	Lstat(path string) (fs.FileInfo, error)
	Readlink(path string) (string, error)
}

// MaxLinks bounds the links followed for one path, as the kernel's 40.
const MaxLinks = 40

// ErrLoop is returned for a path with more than MaxLinks links on the way.
var ErrLoop = errors.New("too many levels of symbolic links")

// MissingError says that a component of the path could not be looked at
// (it does not exist, most often); Rest is the path from there on, as
// written after the links followed so far.
type MissingError struct {
	Rest string
	Err  error
}

func (e *MissingError) Error() string { return e.Rest + ": " + e.Err.Error() }
func (e *MissingError) Unwrap() error { return e.Err }

// Walk returns the real path of the absolute path p. Before each symbolic
// link is followed, link (if not nil) is called with the link's own path;
// an error from it stops the walk and is returned as it is. A component
// that cannot be looked at ends the walk with a *MissingError.
func Walk(h Host, p string, link func(path string) error) (string, error) {
	rest := strings.Split(strings.TrimPrefix(filepath.Clean(p), "/"), "/")
	cur := "/"
	for links := 0; len(rest) > 0; {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, name)
		fi, err := h.Lstat(next)
		if err != nil {
			return "", &MissingError{Rest: filepath.Join(append([]string{next}, rest...)...), Err: err}
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if link != nil {
			if err := link(next); err != nil {
				return "", err
			}
		}
		if links++; links > MaxLinks {
			return "", ErrLoop
		}
		t, err := h.Readlink(next)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(cur, t)
		}
		rest = append(strings.Split(strings.TrimPrefix(filepath.Clean(t), "/"), "/"), rest...)
		cur = "/"
	}
	return cur, nil
}

// Resolve returns the path the kernel reaches for the absolute path p:
// its longest existing prefix with every symbolic link followed (relative
// targets from the link's directory, links through links), the rest
// appended as written (a dangling link names its target). hops are the
// links followed, in order. An error (a loop, more than MaxLinks links, a
// component that cannot be looked at for another reason than its absence,
// such as EACCES) means p cannot be resolved: a caller that decides about
// p must count it as inside whatever it guards.
func Resolve(h Host, p string) (real string, hops []string, err error) {
	real, err = Walk(h, p, func(link string) error {
		hops = append(hops, link)
		return nil
	})
	var missing *MissingError
	if errors.As(err, &missing) {
		if !errors.Is(missing.Err, fs.ErrNotExist) && !errors.Is(missing.Err, syscall.ENOTDIR) {
			return "", hops, err
		}
		return filepath.Clean(missing.Rest), hops, nil
	}
	return real, hops, err
}
