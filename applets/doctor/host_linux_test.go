package doctor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostRunNotSteeredByProject performs the attack: the doctor runs
// host programs (bwrap, systemctl, resolvectl: dynamic ones) in the
// directory it was started in, often a project, which the sandbox
// writes. With an LD_LIBRARY_PATH that has an empty entry (the current
// directory), a library the sandbox put there would be loaded on the
// host. Each runs in /, without the variables that steer the loader.
func TestHostRunNotSteeredByProject(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	prog := filepath.Join(dir, "prog")
	if err := os.WriteFile(prog, []byte(fmt.Sprintf("#!/bin/sh\n{ pwd; env; } >%s\n", marker)), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	t.Setenv("LD_LIBRARY_PATH", ":/opt/lib")
	t.Setenv("LD_PRELOAD", "libfake.so")
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/1000")
	osHost{}.Run(context.Background(), prog)
	b, err := os.ReadFile(marker)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if lines[0] != "/" {
		t.Errorf("ran in %s, want /: the project steers what it loads", lines[0])
	}
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "LD_") {
			t.Errorf("the environment has %s", l)
		}
	}
	if !strings.Contains(string(b), "\nXDG_RUNTIME_DIR=/run/user/1000\n") {
		t.Errorf("the environment lacks XDG_RUNTIME_DIR (systemctl --user needs it):\n%s", b)
	}
}
