package bwrap

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckVersionNotSteeredByProject performs the attack: bwrap is a
// dynamic program (libcap, libselinux) that the launcher runs on the host
// for its version, in the launcher's directory, the project, which the
// sandbox writes. With an LD_LIBRARY_PATH that has an empty entry (the
// current directory), a library the sandbox put in the project would be
// loaded on the host. bwrap --version runs in /, with PATH alone, as the
// AppArmor probe does.
func TestCheckVersionNotSteeredByProject(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	fake := filepath.Join(dir, "bwrap")
	script := fmt.Sprintf("#!/bin/sh\n{ pwd; env; } >%s\necho bubblewrap 0.11.0\n", marker)
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	t.Setenv("LD_LIBRARY_PATH", ":/opt/lib")
	t.Setenv("LD_PRELOAD", "libfake.so")
	Check(fake, "") // the user namespace check may fail here; the run is what counts
	b, err := os.ReadFile(marker)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if lines[0] != "/" {
		t.Errorf("bwrap --version ran in %s, want /: the project steers what it loads", lines[0])
	}
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "LD_") {
			t.Errorf("bwrap --version's environment has %s", l)
		}
	}
}
