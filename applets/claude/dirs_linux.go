package claude

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ensureSandboxHome creates the sandbox home (0700) or checks that the
// existing one is a directory of the user's.
func ensureSandboxHome(path string, uid int) error {
	if err := os.Mkdir(path, 0o700); err == nil {
		return os.Chmod(path, 0o700)
	} else if !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("sandbox home: %w", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("sandbox home: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("sandbox home %s: not a directory (set CLAUDE_SBX_HOME to use another)", path)
	}
	if owner(fi) != uid {
		return fmt.Errorf("sandbox home %s: owned by uid %d, not by you (uid %d)", path, owner(fi), uid)
	}
	// The agent can chmod its home; others must not read its state (API
	// keys in .claude.json) or plant files (hooks, dotfiles) there.
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("sandbox home %s has mode %04o, want 0700: chmod 700 %s", path, fi.Mode().Perm(), path)
	}
	return nil
}

// ensurePrivateTmp creates the sandbox's private /tmp, or checks that the
// existing one is a real directory (not a symlink) owned by the user with
// mode 0700. Another user can pre-create /tmp/claude-private-UID, or a
// symlink there, to read or feed what the agent keeps in /tmp: refuse
// rather than use it. The parent must be one where nobody else can rename
// or replace it (not writable by others, or sticky like /tmp).
func ensurePrivateTmp(path string, uid int) error {
	const fix = "remove it or set CLAUDE_SBX_TMP to a directory of your own"
	parent := filepath.Dir(path)
	pfi, err := os.Stat(parent)
	if err != nil {
		return fmt.Errorf("private tmp %s: %w", path, err)
	}
	if o := owner(pfi); o != 0 && o != uid {
		return fmt.Errorf("private tmp %s: its directory %s is owned by uid %d: set CLAUDE_SBX_TMP to a directory of your own", path, parent, o)
	}
	if pfi.Mode().Perm()&0o022 != 0 && pfi.Mode()&fs.ModeSticky == 0 {
		return fmt.Errorf("private tmp %s: its directory %s is writable by others and not sticky: set CLAUDE_SBX_TMP to a directory of your own", path, parent)
	}
	if err := os.Mkdir(path, 0o700); err == nil {
		if err := os.Chmod(path, 0o700); err != nil {
			return fmt.Errorf("private tmp: %w", err)
		}
	} else if !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("private tmp: %w", err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("private tmp: %w", err)
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, _ := os.Readlink(path)
		return fmt.Errorf("private tmp %s is a symlink (to %q), not a directory: someone may have planted it: %s", path, target, fix)
	case !fi.IsDir():
		return fmt.Errorf("private tmp %s is not a directory: %s", path, fix)
	case owner(fi) != uid:
		return fmt.Errorf("private tmp %s is owned by uid %d, not by you (uid %d): another user may have created it: %s", path, owner(fi), uid, fix)
	case fi.Mode().Perm() != 0o700:
		return fmt.Errorf("private tmp %s has mode %04o, want 0700: run chmod 0700 %s", path, fi.Mode().Perm(), path)
	}
	return nil
}

func owner(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
