// Package bindir owns the directory the agent binaries are installed in
// (normally /opt/claude/bin):
//
//	claude.<version>   the binaries, mode 0755
//	claude             symlink to the current one
//	claude.previous    symlink to the one before (what --rollback returns to)
//	.claude-update.state  what was verified (see State)
//	.claude-update/lock   the lock: mode 0600 in a 0700 directory
//
// Every change is atomic: a binary is written to a temporary file in the
// same directory, synced and renamed; a symlink is switched by renaming a
// new symlink over it; the directory is synced after each change. A failure
// at any point leaves the previous state and no temporary file.
package bindir

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/claude-sandbox/claude-sandbox/internal/release"
)

// Names in the directory.
const (
	Link     = "claude"
	Previous = "claude.previous"
	// PrivateDir holds the lock, mode 0700: flock needs only a
	// descriptor, so a lock that others can open is one they can hold.
	PrivateDir = ".claude-update"
	LockName   = PrivateDir + "/lock"
	// oldLockName is where earlier versions kept the lock, mode 0644.
	oldLockName = ".claude-update.lock"
	TempPrefix  = ".claude-update.tmp."
	binPrefix   = "claude."
)

// Dir is a bin directory.
type Dir struct {
	Path string
	// Trusted makes Lock refuse a directory that anyone but root could
	// change (see CheckTrusted); set it when running as root.
	Trusted bool
	// Logf, if set, reports what does not stop a run (a file skipped).
	Logf func(format string, args ...any)
	lock *os.File
}

// New returns the bin directory at path (which need not exist yet).
func New(path string) *Dir { return &Dir{Path: path} }

// ErrLocked is returned by Lock when another process holds the lock.
var ErrLocked = errors.New("another claude-update is running")

// Lock creates the directory if needed, takes the exclusive lock without
// waiting, and removes temporary files that a killed run left behind
// (holding the lock, no other run can be writing them).
func (d *Dir) Lock() error {
	if d.Trusted {
		if err := CheckTrusted(d.Path); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(d.Path, 0o755); err != nil {
		return d.writeErr(err)
	}
	if d.Trusted {
		if err := CheckTrusted(d.Path); err != nil {
			return err
		}
	}
	f, err := d.openLock()
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("%w (lock %s held)", ErrLocked, f.Name())
		}
		return fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	// The lock of earlier versions, which anyone could open and hold.
	if err := os.Remove(filepath.Join(d.Path, oldLockName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		f.Close()
		return d.writeErr(err)
	}
	d.lock = f
	if err := d.removeTemps(); err != nil {
		return err
	}
	return d.repairPrevious()
}

// openLock opens the lock, creating PrivateDir (0700) and the lock (0600)
// as needed. A lock or directory that others could open is replaced or
// closed first: the lock by a new file renamed over it, so that a
// descriptor someone opened before locks nothing that counts.
func (d *Dir) openLock() (*os.File, error) {
	priv := filepath.Join(d.Path, PrivateDir)
	if err := os.Mkdir(priv, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, d.writeErr(err)
	}
	fi, err := os.Lstat(priv)
	if err != nil {
		return nil, err
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || st == nil || int(st.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("%s is not a directory of uid %d: move it away and run claude-update again", priv, os.Geteuid())
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(priv, 0o700); err != nil {
			return nil, d.writeErr(err)
		}
	}
	p := filepath.Join(d.Path, LockName)
	for attempt := 0; ; attempt++ {
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
		if err != nil {
			return nil, d.writeErr(err)
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, err
		}
		st, _ := fi.Sys().(*syscall.Stat_t)
		if fi.Mode().IsRegular() && fi.Mode().Perm() == 0o600 && st != nil && int(st.Uid) == os.Geteuid() {
			return f, nil
		}
		f.Close()
		if attempt > 0 {
			return nil, fmt.Errorf("%s is not a private lock file: move it away and run claude-update again", p)
		}
		tmp, err := os.CreateTemp(priv, "lock.*")
		if err != nil {
			return nil, d.writeErr(err)
		}
		tmp.Close()
		if err := os.Rename(tmp.Name(), p); err != nil {
			os.Remove(tmp.Name())
			return nil, d.writeErr(err)
		}
	}
}

// Unlock releases the lock.
func (d *Dir) Unlock() {
	if d.lock != nil {
		d.lock.Close()
		d.lock = nil
	}
}

// writeErr turns a permission or read-only error into the advice to use
// sudo or another directory.
func (d *Dir) writeErr(err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) && (errno == syscall.EACCES || errno == syscall.EPERM || errno == syscall.EROFS) {
		return fmt.Errorf("%s is not writable (%w): run with sudo or set CLAUDE_SBX_BINDIR", d.Path, errno)
	}
	if errors.As(err, &errno) && (errno == syscall.ENOSPC || errno == syscall.EDQUOT) {
		return fmt.Errorf("%s is full: %w", d.Path, errno)
	}
	return err
}

func (d *Dir) removeTemps() error {
	ents, err := os.ReadDir(d.Path)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), TempPrefix) {
			if err := os.RemoveAll(filepath.Join(d.Path, e.Name())); err != nil {
				return d.writeErr(err)
			}
		}
	}
	return nil
}

// Binary returns the path of version v's binary.
func (d *Dir) Binary(v release.Version) string {
	return filepath.Join(d.Path, binPrefix+v.String())
}

// Has reports whether version v's binary is present as a regular file.
func (d *Dir) Has(v release.Version) bool {
	fi, err := os.Lstat(d.Binary(v))
	return err == nil && fi.Mode().IsRegular()
}

// Installed returns the versions present, newest first. Files named
// claude.* that are not a version are ignored.
func (d *Dir) Installed() ([]release.Version, error) {
	ents, err := os.ReadDir(d.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var vs []release.Version
	for _, e := range ents {
		s, ok := strings.CutPrefix(e.Name(), binPrefix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		if v, err := release.ParseVersion(s); err == nil {
			vs = append(vs, v)
		}
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i].Compare(vs[j]) > 0 })
	return vs, nil
}

// Current returns the version the claude symlink points to; ok is false when
// there is no symlink.
func (d *Dir) Current() (v release.Version, ok bool, err error) {
	return d.target(Link)
}

// PreviousVersion returns the version claude.previous points to, if that
// binary is still present.
func (d *Dir) PreviousVersion() (v release.Version, ok bool, err error) {
	v, ok, err = d.target(Previous)
	if err != nil || !ok || !d.Has(v) {
		return release.Version{}, false, nil
	}
	return v, true, nil
}

func (d *Dir) target(name string) (release.Version, bool, error) {
	p := filepath.Join(d.Path, name)
	t, err := os.Readlink(p)
	if errors.Is(err, os.ErrNotExist) {
		return release.Version{}, false, nil
	}
	if err != nil {
		if fi, serr := os.Lstat(p); serr == nil && !fi.Mode().IsDir() && fi.Mode()&os.ModeSymlink == 0 {
			return release.Version{}, false, fmt.Errorf("%s is not a symlink to claude.<version>: move it away and run claude-update again", p)
		}
		return release.Version{}, false, err
	}
	// Accept absolute links into this directory, as older installers made.
	if filepath.IsAbs(t) && filepath.Dir(t) != filepath.Clean(d.Path) {
		return release.Version{}, false, fmt.Errorf("%s points to %s, outside %s: move it away and run claude-update again", p, t, d.Path)
	}
	s, ok := strings.CutPrefix(filepath.Base(t), binPrefix)
	v, err := release.ParseVersion(s)
	if !ok || err != nil {
		return release.Version{}, false, fmt.Errorf("%s points to %s, not claude.<version>: move it away and run claude-update again", p, t)
	}
	return v, true, nil
}

// Free returns the bytes available in the directory's file system to
// unprivileged users (root could use the reserved blocks too, but should
// leave them alone).
func (d *Dir) Free() (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(d.Path, &st); err != nil {
		return 0, os.NewSyscallError("statfs", err)
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// Install writes version v: fill writes the binary (and fails if it does not
// verify); the written file is then reopened read-only through its
// descriptor (never by name), hashed again and compared with what was
// written, check runs it from that descriptor (the smoke test), and only
// then is it renamed to claude.<v>, replacing an older copy. It returns the
// installed file, open read-only, with its SHA-256 and size. On any error
// the temporary file is removed and nothing else has changed.
func (d *Dir) Install(ctx context.Context, v release.Version, fill func(io.Writer) error, check func(ctx context.Context, f *os.File) error) (rf *os.File, sum string, size int64, err error) {
	f, err := os.CreateTemp(d.Path, TempPrefix+"*")
	if err != nil {
		return nil, "", 0, d.writeErr(err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			if rf != nil {
				rf.Close()
				rf = nil
			}
			os.Remove(tmp)
			err = d.writeErr(err)
		}
	}()
	h := sha256.New()
	w := &fileWriter{f: f}
	if err := fill(io.MultiWriter(w, h)); err != nil {
		return nil, "", 0, err
	}
	written := hex.EncodeToString(h.Sum(nil))
	if err := f.Chmod(0o755); err != nil {
		return nil, "", 0, err
	}
	if err := f.Sync(); err != nil {
		return nil, "", 0, fmt.Errorf("sync %s: %w", tmp, err)
	}
	// A new read-only description of the same inode: executing a file that
	// is open for writing fails (ETXTBSY), and reopening by name would run
	// whatever the name points to by then.
	rf, err = os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), os.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", 0, fmt.Errorf("reopen %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return nil, "", 0, err
	}
	if err := checkFile(rf, tmp); err != nil {
		return nil, "", 0, err
	}
	sum, size, err = hashFile(rf)
	if err != nil {
		return nil, "", 0, fmt.Errorf("read %s: %w", tmp, err)
	}
	if sum != written || size != w.n {
		return nil, "", 0, fmt.Errorf("%s changed after it was written (sha256 %s, wrote %s)", tmp, sum, written)
	}
	if check != nil {
		if err := check(ctx, rf); err != nil {
			return nil, "", 0, err
		}
	}
	if err := os.Rename(tmp, d.Binary(v)); err != nil {
		return nil, "", 0, err
	}
	if same, err := sameFile(rf, d.Binary(v)); err != nil || !same {
		os.Remove(d.Binary(v))
		return nil, "", 0, fmt.Errorf("%s was replaced while it was being checked: run claude-update again", tmp)
	}
	if err := d.syncDir(); err != nil {
		return nil, "", 0, err
	}
	return rf, sum, size, nil
}

// fileWriter marks write errors so that a full disk is told apart from a
// network failure of the same copy.
type fileWriter struct {
	f *os.File
	n int64
}

func (w *fileWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.n += int64(n)
	if err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) && (errno == syscall.ENOSPC || errno == syscall.EDQUOT) {
			return n, errno
		}
	}
	return n, err
}

// Switch makes v current; f is claude.<v> open as verified (by Verify,
// OpenHashed or Install), and the name must still lead to that file. The
// old current version, if different, becomes the previous one. Two
// symlinks cannot change in one rename, so the pair it is making is saved
// in st (and the state file) first; a run killed between the renames
// leaves claude.previous behind, and the next Lock repairs it from there.
func (d *Dir) Switch(st *State, v release.Version, f *os.File) error {
	if !d.Has(v) {
		return fmt.Errorf("%s is not installed", d.Binary(v))
	}
	if same, err := sameFile(f, d.Binary(v)); err != nil || !same {
		return fmt.Errorf("%s was replaced after it was verified: run claude-update again", d.Binary(v))
	}
	cur, ok, err := d.Current()
	if err != nil {
		return err
	}
	prev, havePrev, err := d.PreviousVersion()
	if err != nil {
		return err
	}
	if ok && cur != v {
		prev, havePrev = cur, true
	}
	st.Current, st.Previous = v.String(), ""
	if havePrev {
		st.Previous = prev.String()
	}
	if err := d.SaveState(st); err != nil {
		return err
	}
	if err := d.link(Link, v); err != nil {
		return err
	}
	if ok && cur != v {
		if err := d.link(Previous, cur); err != nil {
			return err
		}
	}
	return d.syncDir()
}

// repairPrevious points claude.previous where the last Switch meant it to,
// if claude is where that Switch pointed it and the run was killed before
// the second rename.
func (d *Dir) repairPrevious() error {
	st, err := d.State()
	if err != nil || st.Current == "" || st.Previous == "" {
		return nil // a damaged state file is reported where it is read
	}
	cur, ok, err := d.Current()
	if err != nil || !ok || cur.String() != st.Current {
		return nil
	}
	want, err := release.ParseVersion(st.Previous)
	if err != nil || !d.Has(want) {
		return nil
	}
	if got, ok, err := d.target(Previous); err == nil && ok && got == want {
		return nil
	}
	if err := d.link(Previous, want); err != nil {
		return err
	}
	return d.syncDir()
}

// link points name at claude.<v> by renaming a new symlink over it.
func (d *Dir) link(name string, v release.Version) error {
	tmp := filepath.Join(d.Path, TempPrefix+"link."+name)
	os.Remove(tmp)
	if err := os.Symlink(binPrefix+v.String(), tmp); err != nil {
		return d.writeErr(err)
	}
	if err := os.Rename(tmp, filepath.Join(d.Path, name)); err != nil {
		os.Remove(tmp)
		return d.writeErr(err)
	}
	if testHookRenamed != nil {
		return testHookRenamed()
	}
	return nil
}

// testHookRenamed, if set, runs after each symlink rename; an error it
// returns stops Switch there, as a kill would.
var testHookRenamed func() error

func (d *Dir) syncDir() error {
	f, err := os.Open(d.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", d.Path, err)
	}
	return nil
}

// PrunePlan returns the versions to delete so that keep remain: the current
// and previous ones always stay, then the newest others.
func PrunePlan(installed []release.Version, current, previous release.Version, keep int) []release.Version {
	sorted := append([]release.Version(nil), installed...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Compare(sorted[j]) > 0 })
	left := keep
	for _, v := range sorted {
		if v == current || v == previous {
			left--
		}
	}
	var del []release.Version
	for _, v := range sorted {
		if v == current || v == previous {
			continue
		}
		if left > 0 {
			left--
			continue
		}
		del = append(del, v)
	}
	return del
}

// Prune deletes versions beyond keep (see PrunePlan) and returns them.
func (d *Dir) Prune(keep int) ([]release.Version, error) {
	vs, err := d.Installed()
	if err != nil {
		return nil, err
	}
	cur, _, err := d.Current()
	if err != nil {
		return nil, err
	}
	prev, _, err := d.PreviousVersion()
	if err != nil {
		return nil, err
	}
	del := PrunePlan(vs, cur, prev, keep)
	for _, v := range del {
		if err := os.Remove(d.Binary(v)); err != nil {
			return nil, d.writeErr(err)
		}
	}
	if len(del) > 0 {
		return del, d.syncDir()
	}
	return nil, nil
}

// Tidy removes what a killed run left behind (temporary files, and smoke-test
// homes of earlier versions) if the lock can be taken at once. It is for runs that otherwise only
// read (--list, --check), so it creates nothing and ignores every failure.
func (d *Dir) Tidy() {
	if d.Trusted && CheckTrusted(d.Path) != nil {
		return
	}
	f, err := os.OpenFile(filepath.Join(d.Path, LockName), os.O_RDWR|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	if fi, err := f.Stat(); err != nil || fi.Mode().Perm() != 0o600 {
		f.Close()
		return
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return
	}
	d.removeTemps()
}
