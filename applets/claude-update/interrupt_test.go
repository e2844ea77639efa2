package claudeupdate

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/claude-sandbox/claude-sandbox/internal/bindir"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// waitTemp waits until dir holds a temporary download, or fails if the
// process ends first (the test's own timeout bounds the wait).
func waitTemp(t *testing.T, dir string, done <-chan error, stderr *bytes.Buffer) {
	t.Helper()
	for {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), bindir.TempPrefix) {
				return
			}
		}
		select {
		case err := <-done:
			t.Fatalf("claude-update ended before downloading: %v: %s", err, stderr)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestInterrupted stops the shipped binary in the middle of a download: on
// SIGTERM, SIGINT or SIGHUP (its terminal closed) it removes its temporary
// file and exits 128+signal; after
// SIGKILL the next run of any kind (here --list) removes what was left.
func TestInterrupted(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			f := newFixture(t)
			tb := f.npmTarball("2.1.100", fakeAgent("2.1.100", agentSize))
			f.npmPublish(map[string]string{"latest": "2.1.100"}, npmVersion{version: "2.1.100", tarball: tb})
			f.handle(f.tarballPath("2.1.100"), func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", strconv.Itoa(len(tb)))
				w.WriteHeader(http.StatusOK)
				w.Write(tb[:len(tb)/2])
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			})
			dir := filepath.Join(testutil.RootOwnedDir(t), "bin")
			link := testutil.Link(t, t.TempDir(), "claude-update")
			cmd := exec.Command(link, "--source", "npm", "--registry", f.registry)
			cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "CLAUDE_SBX_BINDIR=" + dir, "NPM_CONFIG_GLOBALCONFIG=/nonexistent", "NPM_CONFIG_USERCONFIG=/nonexistent", "npm_config_cafile=" + f.certFile}
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			waitTemp(t, dir, done, &errb)
			cmd.Process.Signal(sig)
			err := <-done
			code := cmd.ProcessState.ExitCode()
			if sig == syscall.SIGKILL {
				if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
					t.Fatalf("not killed: %v", err)
				}
				left := false
				for _, n := range names(t, dir) {
					left = left || strings.HasPrefix(n, bindir.TempPrefix)
				}
				if !left {
					t.Fatalf("no temporary file left by the killed run: %q", names(t, dir))
				}
				if out := runList(t, link, dir); out != "no versions installed in "+dir+"\n" {
					t.Errorf("--list = %q", out)
				}
			} else {
				want := "claude-update: interrupted by " + map[syscall.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT", syscall.SIGHUP: "SIGHUP"}[sig] + "; temporary files removed, nothing changed\n"
				if code != 128+int(sig) || errb.String() != want {
					t.Errorf("exit %d, stderr %q; want %d, %q", code, errb.String(), 128+int(sig), want)
				}
			}
			if diff := cmp.Diff([]string{bindir.PrivateDir}, names(t, dir)); diff != "" {
				t.Errorf("bin dir (-want +got):\n%s", diff)
			}
		})
	}
}

func runList(t *testing.T, link, dir string) string {
	t.Helper()
	cmd := exec.Command(link, "--list")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "CLAUDE_SBX_BINDIR=" + dir}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("--list: %v", err)
	}
	return string(out)
}

// TestSmokeHomeRemoved: what the binary writes into its HOME and TMPDIR
// during the smoke test goes with them.
func TestSmokeHomeRemoved(t *testing.T) {
	f := newFixture(t)
	r := f.newRel("2.1.100")
	r.bin = script(`mkdir -p "$HOME/.claude" && touch "$HOME/.claude/x" "$TMPDIR/y" && echo '2.1.100 (Claude Code)'`, agentSize)
	r.builds[f.platform] = r.bin
	f.publish(r)
	f.mustRun("2.1.100")
	want := []string{bindir.PrivateDir, bindir.StateName, "claude", "claude.2.1.100"}
	sort.Strings(want)
	if diff := cmp.Diff(want, names(t, f.dir)); diff != "" {
		t.Errorf("bin dir (-want +got):\n%s", diff)
	}
}
