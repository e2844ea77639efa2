package bindir

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/claude-sandbox/claude-sandbox/internal/release"
)

// ErrMismatch is returned (wrapped) by Verify when a binary's content is not
// what was recorded.
var ErrMismatch = errors.New("does not match its recorded sha256")

// OpenHashed opens claude.<v> read-only without following a symlink, checks
// that it is a regular file that only its owner, the caller, can change,
// and returns it (at offset 0) with its SHA-256 and size. Running it from
// this descriptor runs exactly the bytes hashed.
func (d *Dir) OpenHashed(v release.Version) (f *os.File, sum string, size int64, err error) {
	p := d.Binary(v)
	f, err = os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, "", 0, err
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	if err := checkFile(f, p); err != nil {
		return nil, "", 0, err
	}
	sum, size, err = hashFile(f)
	if err != nil {
		return nil, "", 0, fmt.Errorf("read %s: %w", p, err)
	}
	return f, sum, size, nil
}

// checkFile refuses what is not a regular file owned by the caller and
// closed to writes by group and others: someone else able to write it could
// change it between the hash and the run.
func checkFile(f *os.File, p string) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file: move it away and run claude-update again", p)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("fstat %s: no owner", p)
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		return fmt.Errorf("%s is owned by uid %d, not %d: remove it and run claude-update again", p, st.Uid, uid)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s is writable by group or others (%v): remove it and run claude-update again", p, fi.Mode())
	}
	return nil
}

func hashFile(f *os.File) (string, int64, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", 0, err
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// Verify opens claude.<v> as OpenHashed does and checks it against rec.
// The caller closes the file.
func (d *Dir) Verify(v release.Version, rec Record) (*os.File, error) {
	f, sum, size, err := d.OpenHashed(v)
	if err != nil {
		return nil, err
	}
	if sum != rec.SHA256 || size != rec.Size {
		f.Close()
		return nil, fmt.Errorf("%s %w (got %s, %d bytes; recorded %s, %d bytes)", d.Binary(v), ErrMismatch, sum, size, rec.SHA256, rec.Size)
	}
	return f, nil
}

// sameFile reports whether path (not followed) is the file f is open on.
func sameFile(f *os.File, path string) (bool, error) {
	a, err := f.Stat()
	if err != nil {
		return false, err
	}
	b, err := os.Lstat(path)
	if err != nil {
		return false, err
	}
	return os.SameFile(a, b), nil
}
