package claude

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/sandbox"
)

// osHost is the real machine, as sandbox.Build sees it.
type osHost struct{}

func (osHost) Stat(p string) (fs.FileInfo, error)      { return os.Stat(p) }
func (osHost) Lstat(p string) (fs.FileInfo, error)     { return os.Lstat(p) }
func (osHost) Readlink(p string) (string, error)       { return os.Readlink(p) }
func (osHost) Glob(pattern string) ([]string, error)   { return filepath.Glob(pattern) }
func (osHost) ReadDir(p string) ([]fs.DirEntry, error) { return os.ReadDir(p) }

// Reachable reports whether the unix socket accepts a connection.
func (osHost) Reachable(socket string) bool { return sandbox.Reachable(socket) }

// ReadFile reads a regular file without following a symlink in its last
// component, and without blocking on a FIFO: what it reads may lie where
// the sandbox writes. Its size is taken on the opened fd, before any read:
// a file of more than max bytes is not read.
func (osHost) ReadFile(p string, max int64) ([]byte, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: p, Err: errors.New("not a regular file")}
	}
	if fi.Size() > max {
		return nil, &sandbox.TooLargeError{Size: fi.Size(), Max: max}
	}
	// It may grow between fstat and read: never more than max and a byte.
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(b)) > max {
		return nil, &sandbox.TooLargeError{Size: int64(len(b)), Max: max}
	}
	return b, err
}
