package cgroup

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
