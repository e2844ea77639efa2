package sandboxcfg

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// Load reads the file at path for the user uid. The file decides what the
// agent sees, so it must be a regular file owned by uid (or root) that
// neither group nor others can write; a symlink is followed and its target
// checked. A missing file is returned as an error satisfying
// errors.Is(err, fs.ErrNotExist). name is the path as shown in messages.
func Load(path, name string, uid int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, name, uid)
}

// Read reads the open file f, checked as Load checks it.
func Read(f *os.File, name string, uid int) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s: not a regular file", name)
	case !ok:
		return nil, fmt.Errorf("%s: cannot read its owner", name)
	case int(st.Uid) != uid && st.Uid != 0:
		return nil, fmt.Errorf("%s: owned by uid %d, not by you (uid %d): it decides what the agent sees; chown it to yourself", name, st.Uid, uid)
	case fi.Mode().Perm()&0o022 != 0:
		return nil, fmt.Errorf("%s: writable by group or others (mode %04o): it decides what the agent sees; run chmod go-w %s", name, fi.Mode().Perm(), name)
	case fi.Size() > MaxSize:
		return nil, fmt.Errorf("%s: larger than %d bytes", name, MaxSize)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(b) > MaxSize {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, MaxSize)
	}
	return b, nil
}
