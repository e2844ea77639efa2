package doctor

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/bindir"
	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
	"github.com/claude-sandbox/claude-sandbox/internal/cgroup"
	"github.com/claude-sandbox/claude-sandbox/internal/sandbox"
	"github.com/claude-sandbox/claude-sandbox/internal/toolchain"
)

// osHost is the real machine.
type osHost struct {
	uid  int
	name string
}

func newHost() (Host, error) {
	uid := os.Getuid()
	name := strconv.Itoa(uid)
	if u, err := user.LookupId(name); err == nil {
		name = u.Username
	}
	return osHost{uid: uid, name: name}, nil
}

func (osHost) ReadFile(p string) ([]byte, error) { return os.ReadFile(p) }
func (osHost) Readlink(p string) (string, error) { return os.Readlink(p) }
func (osHost) Getenv(k string) string            { return os.Getenv(k) }
func (h osHost) UID() int                        { return h.uid }
func (h osHost) User() string                    { return h.name }
func (osHost) FindBwrap() (string, error)        { return bwrap.Find(os.Getenv("PATH")) }

func (osHost) Stat(p string) (FileInfo, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return FileInfo{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return FileInfo{}, errors.New(p + ": no owner")
	}
	return FileInfo{Mode: fi.Mode(), UID: st.Uid}, nil
}

// runTimeout bounds every command a check runs: a hung resolver or user
// manager must not hang the doctor.
const runTimeout = 20 * time.Second

func (osHost) Run(ctx context.Context, argv ...string) Output {
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	// In /, without what steers the loader: the doctor's directory may be
	// a project, which a sandbox writes, and an LD_LIBRARY_PATH with an
	// empty entry names it.
	cmd.Dir = "/"
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return sandbox.LoaderVar(k)
	})
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	o := Output{Stdout: out.String(), Stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		o.Code = ee.ExitCode()
		if ctx.Err() != nil {
			o.Err = errors.New(argv[0] + ": no answer in " + runTimeout.String())
		} else if o.Code < 0 {
			o.Err = err
		}
	default:
		o.Err = err
	}
	return o
}

// Reachable reports whether the unix socket accepts a connection.
func (osHost) Reachable(socket string) bool { return sandbox.Reachable(socket) }

// SHA256 hashes a regular file opened as bindir opens the binaries it
// verifies: not through a symlink, and without hanging on a FIFO.
func (osHost) SHA256(p string) (string, int64, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", 0, errors.New("not a regular file")
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

func (osHost) AgentState(dir string) (*bindir.State, error) { return bindir.ReadState(dir) }
func (osHost) TrustBinDir(dir string) error                 { return bindir.CheckTrusted(dir) }

func (osHost) Tree() toolchain.Host { return osTree{} }

func (h osHost) Cgroup() cgroup.Delegation { return cgroup.ForSelf(h.uid) }

// osTree is the real file system for toolchain.Make. It only looks: the
// doctor binds nothing, so nothing here is checked again on an fd.
type osTree struct{}

func (osTree) Lstat(p string) (fs.FileInfo, error)     { return os.Lstat(p) }
func (osTree) Stat(p string) (fs.FileInfo, error)      { return os.Stat(p) }
func (osTree) Readlink(p string) (string, error)       { return os.Readlink(p) }
func (osTree) ReadDir(p string) ([]fs.DirEntry, error) { return os.ReadDir(p) }

// DiskUsage sums the blocks of the files below dir. WalkDir does not
// follow symlinks; another file system below dir is not entered.
func (osHost) DiskUsage(dir string) (int64, error) {
	var root syscall.Stat_t
	if err := syscall.Lstat(dir, &root); err != nil {
		return 0, err
	}
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		if st.Dev != root.Dev {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		total += st.Blocks * 512
		return nil
	})
	return total, err
}
