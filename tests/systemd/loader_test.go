//go:build linux

package systemd

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil/nspawn"
)

// markerLog is where the marker library notes each program that loads it:
// outside the sandbox only (/var/tmp is a tmpfs inside).
const markerLog = "/var/tmp/claude-sbx-loaded"

// markerLib is in the agent's directory, so that it is visible inside too.
const markerLib = "/opt/claude/bin/libsbxmark.so"

const markerSource = `#include <fcntl.h>
#include <unistd.h>
__attribute__((constructor)) static void mark(void) {
	char buf[4096];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
	int fd = open("` + markerLog + `", O_WRONLY | O_APPEND);
	if (fd < 0 || n <= 0) return;
	buf[n] = '\n';
	write(fd, buf, n + 1);
	close(fd);
}
`

// loaderVarsStayOutOfTheChain: LD_PRELOAD and LD_LIBRARY_PATH, from the
// user's environment or the config, reach neither systemd-run nor
// netns-enter nor bwrap, which run on the host. The only programs outside
// the sandbox that load the library are the env(1) wrappers of the test.
func loaderVarsStayOutOfTheChain(t *testing.T, m *nspawn.Machine, u testutil.User) {
	gcc := testutil.RequireCommand(t, "gcc")
	dir := t.TempDir()
	src := filepath.Join(dir, "mark.c")
	if err := os.WriteFile(src, []byte(markerSource), 0o644); err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(dir, "lib.so")
	if out, err := exec.Command(gcc, "-shared", "-fPIC", "-o", lib, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v: %s", err, out)
	}
	b, err := os.ReadFile(lib)
	if err != nil {
		t.Fatal(err)
	}
	m.WriteFile(t, markerLib, string(b), 0o755)
	config := filepath.Join(u.Home, ".claude-sandbox-init")
	ctx := context.Background()
	for _, tt := range []struct {
		name, config string
		env          []string
	}{
		{"environment", "", []string{"LD_PRELOAD=" + markerLib, "LD_LIBRARY_PATH=/opt/claude/bin"}},
		{"config", "setenv LD_PRELOAD libsbxmark.so\nsetenv LD_LIBRARY_PATH /opt/claude/bin\n", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m.WriteFile(t, markerLog, "", 0o666)
			if tt.config != "" {
				m.WriteFile(t, config, tt.config, 0o644)
				defer os.Remove(m.Path(config))
			}
			args := append(append([]string{"env"}, tt.env...), "claude", "--shell", "-c", "echo inside=$LD_PRELOAD")
			out, err := m.RunAs(ctx, u.Name, args...)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.Stdout, "inside=") || !strings.Contains(out.Stdout, "libsbxmark.so") {
				t.Errorf("LD_PRELOAD did not reach the sandbox: %q", out.Stdout)
			}
			log, err := os.ReadFile(m.Path(markerLog))
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range strings.Fields(string(log)) {
				if !strings.HasSuffix(l, "/env") {
					t.Errorf("%s outside the sandbox loaded the library (log %q)", l, log)
				}
			}
		})
	}
}
