package claude

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/hostpath"
	"github.com/claude-sandbox/claude-sandbox/internal/quote"
	"github.com/claude-sandbox/claude-sandbox/internal/sandbox"
)

// homesName is sandbox.HomesName.
const homesName = sandbox.HomesName

// DirID tells the device and inode of a directory, which key its
// project's home (sandbox.IDHost).
func (osHost) DirID(p string) (dev, ino uint64, err error) {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return 0, 0, err
	}
	return uint64(st.Dev), st.Ino, nil
}

// checkHomes checks that the directory of the per-project homes is a
// directory (not a symlink) of the user's that nobody else can use.
func checkHomes(path string, uid int) func(r *hostpath.Resolved) error {
	return checkOwnDir("sandbox homes", path, uid)
}

// checkOwnDir checks that path, named what in messages, is a directory
// (not a symlink) of the user's that nobody else can use.
func checkOwnDir(what, path string, uid int) func(r *hostpath.Resolved) error {
	return func(r *hostpath.Resolved) error {
		st := &r.Stat
		switch {
		case r.IsSymlink():
			return fmt.Errorf("%s %s is a symlink (to %q), not a directory: remove it", what, quote.String(path), linkTarget(r))
		case !r.IsDir():
			return fmt.Errorf("%s %s: not a directory: remove it", what, quote.String(path))
		case int(st.Uid) != uid:
			return fmt.Errorf("%s %s: owned by uid %d, not by you (uid %d)", what, quote.String(path), st.Uid, uid)
		case st.Mode&0o077 != 0:
			return fmt.Errorf("%s %s has mode %04o, want 0700: chmod 700 %s", what, quote.String(path), st.Mode&0o7777, quote.String(path))
		}
		return nil
	}
}

// checkCredentials checks the login every per-project home shares: a
// plain file of the user's, readable by nobody else, with no other name
// (through which someone could change what every sandbox reads).
func checkCredentials(path string, uid int) func(r *hostpath.Resolved) error {
	return func(r *hostpath.Resolved) error {
		st := &r.Stat
		switch {
		case st.Mode&unix.S_IFMT != unix.S_IFREG:
			return fmt.Errorf("shared login %s is not a regular file: remove it (you log in again once)", quote.String(path))
		case int(st.Uid) != uid:
			return fmt.Errorf("shared login %s: owned by uid %d, not by you (uid %d): remove it", quote.String(path), st.Uid, uid)
		case st.Mode&0o077 != 0:
			return fmt.Errorf("shared login %s has mode %04o, want 0600: chmod 600 %s", quote.String(path), st.Mode&0o7777, quote.String(path))
		case st.Nlink != 1:
			return fmt.Errorf("shared login %s has %d links: another name could change it: make it a plain file (cp it aside and back)", quote.String(path), st.Nlink)
		}
		return nil
	}
}

// homeRules adds the checks of a per-project home and of the shared login
// to rules.
func homeRules(rules map[string]srcRule, l *sandbox.Launch, uid int) {
	if l.Homes == "" {
		return
	}
	rules[l.SandboxHome] = srcRule{noFollow: true, exposeHome: true, check: checkSandboxHome(l.SandboxHome, uid),
		create: true, name: "sandbox home"}
	cred := filepath.Join(l.Homes, sandbox.CredentialsName)
	rules[cred] = srcRule{noFollow: true, exposeHome: true, check: checkCredentials(cred, uid)}
}

// ensureHomes makes the directory of the per-project homes (0700) and the
// shared login in it, when missing. The login starts as a copy of the one
// in the shared home (the one-time migration: every project shared that
// home before), else as an empty JSON object, which the agent reads as
// "not logged in".
func ensureHomes(l *sandbox.Launch, sharedHome string, uid int) error {
	if l.Homes == "" {
		return nil
	}
	rule := srcRule{create: true, name: "sandbox homes", check: checkHomes(l.Homes, uid)}
	parent, r, err := openOrParent(l.Homes, rule)
	if err != nil {
		return err
	}
	if r == nil {
		r, err = createDir(parent, l.Homes, rule)
		parent.Close()
		if err != nil {
			return err
		}
	} else if err := rule.check(r); err != nil {
		r.Close()
		return err
	}
	defer r.Close()
	path := filepath.Join(l.Homes, sandbox.CredentialsName)
	dir := int(r.File.Fd())
	var st unix.Stat_t
	if err := unix.Fstatat(dir, sandbox.CredentialsName, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		return nil // checked when it is bound
	}
	// Written under another name and put in place only if still missing,
	// so that a start beside this one never binds a half-written login.
	tmp := fmt.Sprintf(".%s.%d", sandbox.CredentialsName, os.Getpid())
	unix.Unlinkat(dir, tmp, 0) // left by a launcher killed here
	fd, err := unix.Openat(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("shared login %s: %w", quote.String(path), err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	err = unix.Fchmod(fd, 0o600)
	if err == nil {
		_, err = f.Write(seedLogin(sharedHome, uid))
	}
	if err == nil {
		err = unix.Renameat2(dir, tmp, dir, sandbox.CredentialsName, unix.RENAME_NOREPLACE)
		if errors.Is(err, unix.EEXIST) {
			err = nil
		}
	}
	unix.Unlinkat(dir, tmp, 0)
	if err != nil {
		return fmt.Errorf("shared login %s: %w", quote.String(path), err)
	}
	return nil
}

// maxLogin bounds the login file copied from the shared home.
const maxLogin = 1 << 20

// seedLogin returns the agent's login from the shared home
// (.claude/.credentials.json): a regular file of the user's reached
// without a symlink (the agent could have planted one), at most maxLogin
// bytes; else "{}".
func seedLogin(sharedHome string, uid int) []byte {
	none := []byte("{}")
	r, err := hostpath.Open(filepath.Join(sharedHome, ".claude", ".credentials.json"), false)
	if err != nil {
		return none
	}
	defer r.Close()
	if len(r.Hops) > 0 || r.Stat.Mode&unix.S_IFMT != unix.S_IFREG || int(r.Stat.Uid) != uid || r.Stat.Size > maxLogin {
		return none
	}
	fd, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", r.File.Fd()), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return none
	}
	f := os.NewFile(uintptr(fd), "login")
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxLogin+1))
	if err != nil || len(b) == 0 || len(b) > maxLogin {
		return none
	}
	return b
}
