package claude

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/agentprofile"
	"github.com/claude-sandbox/claude-sandbox/internal/hostpath"
	"github.com/claude-sandbox/claude-sandbox/internal/sandbox"
)

// The agent's setup kept across per-project homes (internal/agentprofile
// decides what it holds): sandbox.ProfileName in the directory of the
// homes, which no sandbox sees. A new project's home starts with a
// ~/.claude.json made from it; after a session it is updated from that
// project's ~/.claude.json.

// agentConfigName is the agent's own file in its home.
const agentConfigName = ".claude.json"

// openHomesDir opens the directory of the per-project homes (made by
// ensureHomes) and checks it, and returns the name of the project's home
// in it.
func openHomesDir(l *sandbox.Launch, uid int) (*hostpath.Resolved, string, error) {
	if l.Homes == "" || filepath.Dir(l.SandboxHome) != filepath.Clean(l.Homes) {
		return nil, "", fmt.Errorf("no per-project home")
	}
	r, err := hostpath.Open(l.Homes, false)
	if err != nil {
		return nil, "", err
	}
	if err := checkHomes(l.Homes, uid)(r); err != nil {
		r.Close()
		return nil, "", err
	}
	return r, filepath.Base(l.SandboxHome), nil
}

// seedHome makes the project's home when it is missing, with a
// ~/.claude.json made from the profile. A home that exists is left alone
// (checked when it is bound); one made by a start beside this one too.
func seedHome(l *sandbox.Launch, uid int) error {
	if l.Homes == "" {
		return nil
	}
	r, name, err := openHomesDir(l, uid)
	if err != nil {
		return nil // ensureHomes and the bind say what is wrong
	}
	defer r.Close()
	dir := int(r.File.Fd())
	if err := unix.Mkdirat(dir, name, 0o700); err != nil {
		return nil // there already, or the bind says why not
	}
	hfd, err := unix.Openat(dir, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("sandbox home %s: %w", l.SandboxHome, err)
	}
	defer unix.Close(hfd)
	if err := unix.Fchmodat(dir, name, 0o700, 0); err != nil {
		return fmt.Errorf("sandbox home %s: %w", l.SandboxHome, err)
	}
	p := agentprofile.Encode(readProfile(dir, uid))
	if err := writeAt(hfd, agentConfigName, p); err != nil {
		return fmt.Errorf("sandbox home %s: %s: %w", l.SandboxHome, agentConfigName, err)
	}
	return nil
}

// updateProfile updates the profile from the project's ~/.claude.json:
// read through an fd opened without following a link, a regular file of
// the user's of at most agentprofile.MaxInput bytes. A file that is
// missing, larger or does not parse leaves the profile as it was. It says
// nothing: the session has ended, and the next start has the profile as
// it was.
func updateProfile(l *sandbox.Launch, uid int) {
	if l.Homes == "" {
		return
	}
	r, name, err := openHomesDir(l, uid)
	if err != nil {
		return
	}
	defer r.Close()
	dir := int(r.File.Fd())
	hfd, err := unix.Openat(dir, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	b, ok := readBounded(hfd, agentConfigName, uid, agentprofile.MaxInput)
	unix.Close(hfd)
	if !ok {
		return
	}
	p, err := agentprofile.Filter(b)
	if err != nil {
		return
	}
	writeAt(dir, sandbox.ProfileName, agentprofile.Encode(agentprofile.Merge(readProfile(dir, uid), p)))
}

// readProfile returns the profile in the directory of the homes, filtered
// again (whoever wrote it), or an empty one.
func readProfile(dir, uid int) map[string]any {
	if b, ok := readBounded(dir, sandbox.ProfileName, uid, agentprofile.MaxInput); ok {
		if p, err := agentprofile.Filter(b); err == nil {
			return p
		}
	}
	return map[string]any{}
}

// readBounded reads name in dir without following a link: a regular file
// owned by uid, of at most max bytes.
func readBounded(dir int, name string, uid int, max int64) ([]byte, bool) {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != uid || st.Size > max {
		return nil, false
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil || int64(len(b)) > max {
		return nil, false
	}
	return b, true
}

// writeAt writes name in dir atomically: a new file of mode 0600 under
// another name, synced, renamed over name.
func writeAt(dir int, name string, b []byte) error {
	tmp := fmt.Sprintf(".%s.%d", name, os.Getpid())
	unix.Unlinkat(dir, tmp, 0) // left by a launcher killed here
	fd, err := unix.Openat(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmp)
	err = unix.Fchmod(fd, 0o600)
	if err == nil {
		_, err = f.Write(b)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dir, tmp, dir, name)
	}
	if err != nil {
		unix.Unlinkat(dir, tmp, 0)
	}
	return err
}
