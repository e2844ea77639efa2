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
