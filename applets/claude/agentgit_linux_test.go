package claude

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostGitVersionNotSteeredByProject performs the attack: the launcher
// runs the host's git (a dynamic program) for its version, in the
// launcher's directory, the project, which the sandbox writes. With an
// LD_LIBRARY_PATH that has an empty entry (the current directory), a
// library the sandbox put in the project would be loaded on the host. git
// --version runs in /, without the variables that steer the loader.
func TestHostGitVersionNotSteeredByProject(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	script := fmt.Sprintf("#!/bin/sh\n{ pwd; env; } >%s\necho git version 2.45.1\n", marker)
	if err := os.WriteFile(filepath.Join(dir, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	t.Setenv("PATH", dir+":/usr/bin:/bin")
	t.Setenv("LD_LIBRARY_PATH", ":/opt/lib")
	t.Setenv("LD_PRELOAD", "libfake.so")
	if err := checkHostGit(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(marker)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if lines[0] != "/" {
		t.Errorf("git --version ran in %s, want /: the project steers what it loads", lines[0])
	}
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "LD_") {
			t.Errorf("git --version's environment has %s", l)
		}
	}
}
