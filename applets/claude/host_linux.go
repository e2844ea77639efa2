package claude

import (
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// osHost is the real machine, as sandbox.Build sees it.
type osHost struct{}

func (osHost) Stat(p string) (fs.FileInfo, error)    { return os.Stat(p) }
func (osHost) Lstat(p string) (fs.FileInfo, error)   { return os.Lstat(p) }
func (osHost) Readlink(p string) (string, error)     { return os.Readlink(p) }
func (osHost) Glob(pattern string) ([]string, error) { return filepath.Glob(pattern) }
func (osHost) EvalSymlinks(p string) (string, error) { return filepath.EvalSymlinks(p) }
func (osHost) ReadFile(p string) ([]byte, error)     { return os.ReadFile(p) }

// Reachable connects to the unix socket and hangs up: a stale socket file
// left by a manager that exited does not count.
func (osHost) Reachable(socket string) bool {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	return unix.Connect(fd, &unix.SockaddrUnix{Name: socket}) == nil
}
