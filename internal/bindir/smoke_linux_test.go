package bindir

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// agentFile writes a script answering --version as version v would, and
// returns it open read-only, as Smoke gets it.
func agentFile(t *testing.T, v string) *os.File {
	t.Helper()
	p := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho '"+v+" (Claude Code)'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestSmokeBwrapCannotSetUp: a bwrap that cannot set up here (it says so
// as bwrap does) fails the smoke test, decided by the probe before the
// binary runs; the binary never runs outside bwrap.
func TestSmokeBwrapCannotSetUp(t *testing.T) {
	dir := testutil.RootOwnedDir(t)
	fake := filepath.Join(dir, "bwrap")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	old := bwrapPaths
	bwrapPaths = []string{fake}
	defer func() { bwrapPaths = old }()
	d := New(t.TempDir())
	err := d.Smoke(context.Background(), agentFile(t, "2.1.5"), v1("2.1.5"))
	want := "smoke test of 2.1.5: bwrap cannot set up here (" + fake + " with /usr/bin/true: exit status 1: bwrap: No permissions to create new namespace): " +
		"allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1 and user.max_user_namespaces > 0, or an AppArmor profile that lets " + fake + " use them); the new binary runs only inside bwrap"
	if err == nil || err.Error() != want {
		t.Errorf("Smoke() = %v, want %s", err, want)
	}
}

// TestSmokeUntrustedBwrap: as root, a bwrap that others could replace is
// not run (one line says so), and without bwrap the smoke test fails.
func TestSmokeUntrustedBwrap(t *testing.T) {
	testutil.RequireRoot(t)
	dir := testutil.RootOwnedDir(t)
	fake := filepath.Join(dir, "bwrap")
	marker := filepath.Join(t.TempDir(), "ran")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\ntouch "+marker+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(fake, 0o777)
	old := bwrapPaths
	bwrapPaths = []string{fake}
	defer func() { bwrapPaths = old }()
	var lines []string
	d := New(t.TempDir())
	d.Logf = func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) }
	err := d.Smoke(context.Background(), agentFile(t, "2.1.5"), v1("2.1.5"))
	if want := "smoke test of 2.1.5: no bwrap in " + fake + ": install bubblewrap; the new binary runs only inside it"; err == nil || err.Error() != want {
		t.Errorf("Smoke() = %v, want %s", err, want)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the group- and world-writable bwrap ran")
	}
	want := "bwrap " + fake + " is unsafe for root: " + fake + " is writable by group or others (-rwxrwxrwx): root reads only what root owns and only root can write; skipped"
	if strings.Join(lines, "\n") != want {
		t.Errorf("lines = %q, want %q", lines, want)
	}
}

// fakeInfo is an fs.FileInfo of a mode only.
type fakeInfo struct{ mode fs.FileMode }

func (f fakeInfo) Name() string       { return "" }
func (f fakeInfo) Size() int64        { return 0 }
func (f fakeInfo) Mode() fs.FileMode  { return f.mode }
func (f fakeInfo) ModTime() time.Time { return time.Time{} }
func (f fakeInfo) IsDir() bool        { return f.mode.IsDir() }
func (f fakeInfo) Sys() any           { return nil }

// TestSmokeArgs: on a merged /usr, /bin, /sbin and /lib* are made as the
// same symlinks, a missing one is left out, and nothing else of the host
// is bound but /usr and the few /etc files.
func TestSmokeArgs(t *testing.T) {
	host := map[string]fs.FileMode{"/usr": fs.ModeDir, "/bin": fs.ModeSymlink, "/sbin": fs.ModeSymlink, "/lib": fs.ModeSymlink, "/lib64": fs.ModeSymlink}
	lstat := func(p string) (fs.FileInfo, error) {
		if m, ok := host[p]; ok {
			return fakeInfo{m}, nil
		}
		return nil, fs.ErrNotExist
	}
	readlink := func(p string) (string, error) { return "usr" + p, nil }
	got := strings.Join(smokeArgs("/usr/bin/bwrap", 5, lstat, readlink), " ")
	want := "/usr/bin/bwrap --unshare-all --unshare-user --die-with-parent --new-session --clearenv " +
		"--ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/sbin /sbin --symlink usr/lib /lib --symlink usr/lib64 /lib64 " +
		"--ro-bind-try /etc/ld.so.cache /etc/ld.so.cache --ro-bind-try /etc/passwd /etc/passwd --ro-bind-try /etc/group /etc/group " +
		"--ro-bind-try /etc/nsswitch.conf /etc/nsswitch.conf --ro-bind-try /etc/hosts /etc/hosts " +
		"--proc /proc --dev /dev --tmpfs /tmp --remount-ro / --chdir / --seccomp 5 --"
	if got != want {
		t.Errorf("smokeArgs() =\n%s\nwant\n%s", got, want)
	}
}
