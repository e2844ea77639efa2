// Package testutil holds helpers for tests that need root, an unprivileged
// user, bwrap or a built multicall binary.
//
// A missing prerequisite skips the test with the reason, except when CI=true:
// then it fails, so CI never passes by skipping.
package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
)

// InCI reports whether CI=true is set.
func InCI() bool { return os.Getenv("CI") == "true" }

// Missing reports a missing prerequisite: a skip locally, a failure in CI.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if InCI() {
		t.Fatalf("prerequisite missing (CI=true, so this fails instead of skipping): %s", msg)
	}
	t.Skipf("skipping: %s", msg)
}

// RequireRoot skips or fails unless the test runs as root.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		Missing(t, "test needs root (run: sudo make test)")
	}
}

// RequireCommand returns the path of a command or skips/fails.
func RequireCommand(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, "%s not found in PATH: %v", name, err)
	}
	return p
}

// TestUserName is the unprivileged user tests run the sandbox as. .ci/run
// creates it; RequireUser creates it when missing and running as root.
const TestUserName = "claude-sbx-test"

// User is an unprivileged account.
type User struct {
	Name     string
	Uid, Gid uint32
	Home     string
}

var userMu sync.Mutex

// RequireUser returns the unprivileged test user, creating it if needed.
func RequireUser(t testing.TB) User {
	t.Helper()
	RequireRoot(t)
	userMu.Lock()
	defer userMu.Unlock()
	u, err := user.Lookup(TestUserName)
	if err != nil {
		// Serialise with other test processes: useradd fails when it
		// cannot lock /etc/passwd.
		lock, lerr := os.OpenFile("/run/lock/claude-sbx-test-useradd", os.O_CREATE|os.O_RDWR, 0o600)
		if lerr != nil {
			t.Fatalf("lock: %v", lerr)
		}
		defer lock.Close()
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
			t.Fatalf("flock: %v", err)
		}
		if u, err = user.Lookup(TestUserName); err != nil {
			out, err := exec.Command("useradd", "--create-home", "--shell", "/bin/bash", TestUserName).CombinedOutput()
			if err != nil {
				t.Fatalf("useradd %s: %v: %s", TestUserName, err, out)
			}
			if u, err = user.Lookup(TestUserName); err != nil {
				t.Fatalf("lookup %s after useradd: %v", TestUserName, err)
			}
		}
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	if uid == 0 {
		t.Fatalf("test user %s has uid 0", TestUserName)
	}
	return User{Name: u.Username, Uid: uint32(uid), Gid: uint32(gid), Home: u.HomeDir}
}

// Command returns a command that runs as u, with a minimal environment
// (HOME, USER, LOGNAME, PATH, SHELL) to which callers may append.
func (u User) Command(home, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: u.Uid, Gid: u.Gid, Groups: []uint32{}},
	}
	cmd.Env = []string{
		"HOME=" + home,
		"USER=" + u.Name,
		"LOGNAME=" + u.Name,
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"SHELL=/bin/bash",
		"LANG=C.UTF-8",
	}
	cmd.Dir = home
	return cmd
}

// Chown gives path (not following symlinks) to u.
func (u User) Chown(t testing.TB, path string) {
	t.Helper()
	if err := os.Lchown(path, int(u.Uid), int(u.Gid)); err != nil {
		t.Fatal(err)
	}
}

// PublicDir returns a fresh directory that every user can traverse (mode
// 0755 on it and its parents), removed after the test. t.TempDir's parents
// are 0700 and so not usable by the unprivileged test user.
func PublicDir(t testing.TB) string {
	t.Helper()
	base := filepath.Join(os.TempDir(), "claude-sbx-tests")
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(base, "t")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// UserHome returns a fresh home directory owned by u (mode 0700) inside a
// PublicDir.
func UserHome(t testing.TB, u User) string {
	t.Helper()
	home := filepath.Join(PublicDir(t), "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	u.Chown(t, home)
	return home
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// ModuleRoot returns the repository root (the directory holding go.mod).
func ModuleRoot(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Binary builds the multicall binary once per test process, with extra
// ldflags (-X ...) if given on the first call, into a directory readable by
// every user, and returns its path. Applet links are made by Link.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "claude-sbx-bin")
		if buildErr != nil {
			return
		}
		if buildErr = os.Chmod(buildDir, 0o755); buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(buildDir, "multicall"), "./cmd/multicall")
		cmd.Dir = ModuleRoot(t)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(buildDir, "multicall")
}

// Link makes dir/name a symlink to the multicall binary and returns it.
func Link(t testing.TB, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.Symlink(Binary(t), p); err != nil {
		t.Fatal(err)
	}
	return p
}
