package cgroup

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// TestDirFSFind: Find reads a hierarchy on disk through DirFS (a fake
// one here: this machine need not have cgroup v2).
func TestDirFSFind(t *testing.T) {
	root := t.TempDir()
	user := filepath.Join(root, "box", "user")
	if err := os.MkdirAll(filepath.Join(user, "login"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"cgroup.controllers":                    "cpu memory pids\n",
		"box/user/cgroup.procs":                 "",
		"box/user/cgroup.subtree_control":       "memory pids\n",
		"box/user/login/cgroup.procs":           "1\n",
		"box/user/login/cgroup.subtree_control": "",
	} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := Find(DirFS(root), "/box/user/login", os.Getuid())
	if got.Dir != "box/user" || strings.Join(got.Controllers, " ") != "memory pids" {
		t.Errorf("Find = %+v, want box/user with memory pids", got)
	}
	if got := Find(DirFS(root), "/box/user/login", os.Getuid()+1); got.Dir != "" {
		t.Errorf("Find for another uid = %+v, want none", got)
	}
}

// TestMakeLeavesNothingOnError: a limit that cannot be written (a plain
// directory has no memory.max) removes the cgroup made for it.
func TestMakeLeavesNothingOnError(t *testing.T) {
	parent := t.TempDir()
	p := Plan{Parent: parent, Writes: []Write{{"memory.max", "1048576"}}}
	_, err := Make(p, Name(42))
	dir := filepath.Join(parent, "claude-sandbox-42")
	if err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), dir+"/memory.max") {
		t.Errorf("Make = %v, want ENOENT naming %s/memory.max", err, dir)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Make left %s: %v", dir, err)
	}
	// Without limits it makes the directory, and Remove removes it.
	g, err := Make(Plan{Parent: parent}, Name(42))
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() || g.FD() < 0 {
		t.Errorf("Make(no writes): %v %v fd %d", fi, err, g.FD())
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Remove left %s: %v", dir, err)
	}
}

// cgroup2Mount returns where a cgroup v2 hierarchy is mounted
// (/proc/self/mountinfo) and this process's cgroup in it.
func cgroup2Mount(t *testing.T) (mount, self string) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if i := slices.Index(f, "-"); i > 4 && i+1 < len(f) && f[i+1] == "cgroup2" && f[3] == "/" {
			mount = f[4]
			break
		}
	}
	if mount == "" {
		testutil.Missing(t, "no cgroup v2 hierarchy mounted (/proc/self/mountinfo)")
	}
	b, err = os.ReadFile(ProcSelf)
	if err != nil {
		t.Fatal(err)
	}
	self, err = Self(b)
	if err != nil {
		t.Fatal(err)
	}
	return mount, self
}

// TestMakeStartsTheChildInIt: on the kernel's cgroup v2 hierarchy, a
// process started with the group's fd (clone3's CLONE_INTO_CGROUP) is in
// the group before it execs, and the group goes when it is empty. Limits
// are not written: the hierarchy of a cgroup v1 host (its unified one)
// has no controllers; the cgroup2 suite (tests/systemd) tests them.
func TestMakeStartsTheChildInIt(t *testing.T) {
	testutil.RequireRoot(t)
	mount, self := cgroup2Mount(t)
	g, err := Make(Plan{Parent: filepath.Join(mount, self)}, Name(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Remove()
	cmd := exec.Command("/bin/cat", ProcSelf)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: g.FD()}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cat %s in the group: %v", ProcSelf, err)
	}
	got, err := Self(out)
	if want := path.Join(self, Name(os.Getpid())); err != nil || got != want {
		t.Errorf("the child's cgroup = %q, %v; want %q", got, err, want)
	}
	if err := g.Remove(); err != nil {
		t.Errorf("Remove of the emptied group: %v", err)
	}
	if _, err := os.Lstat(g.Path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Remove left %s: %v", g.Path, err)
	}
}
