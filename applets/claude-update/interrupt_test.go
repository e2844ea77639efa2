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

// confinedAgent answers --version like the agent only if its own
// /proc/self/status (read by the shell itself, not a child) shows a
// non-root uid, no effective capabilities, no_new_privs and a seccomp
// filter, its environment is empty (no HOME, PATH or DISABLE_UPDATES from
// claude-update), its network namespace has only lo and its mount
// namespace is not hostMnt's (bwrap's); otherwise it prints what it saw.
func confinedAgent(v, hostMnt string) []byte {
	return script(`uid= eff= nnp= sec=
while read -r k a b; do
	case $k in Uid:) uid=$a;; CapEff:) eff=$a;; NoNewPrivs:) nnp=$a;; Seccomp:) sec=$a;; esac
done </proc/self/status
links=0
while read -r l; do links=$((links+1)); done </proc/self/net/dev
envs=${HOME+HOME}${DISABLE_UPDATES+DISABLE_UPDATES}${TMPDIR+TMPDIR}
mnt=$(readlink /proc/self/ns/mnt)
if [ "$mnt" = '`+hostMnt+`' ]; then mnt=host; fi
if [ "$mnt" != host ] && [ "$uid" != 0 ] && [ "$eff" = 0000000000000000 ] && [ "$nnp" = 1 ] && [ "$sec" = 2 ] && [ "$links" = 3 ] && [ -z "$envs" ]; then
	echo '`+v+` (Claude Code)'
else
	echo "uid=$uid CapEff=$eff NoNewPrivs=$nnp Seccomp=$sec net-lines=$links env=$envs mnt=$mnt"
fi`, agentSize)
}

// TestSmokeConfined: the smoke test runs the new binary as an
// unprivileged uid, without capabilities, with no_new_privs, under the
// launcher's seccomp filter, in an empty environment and without network,
// in bwrap (installed here, so required); it leaves nothing behind in the
// bin dir.
func TestSmokeConfined(t *testing.T) {
	testutil.RequireRoot(t)
	if _, err := os.Stat("/usr/bin/bwrap"); err != nil {
		testutil.Missing(t, "no /usr/bin/bwrap: %v", err)
	}
	hostMnt, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	f.root = true
	f.dir = filepath.Join(testutil.RootOwnedDir(t), "bin")
	f.env["CLAUDE_SBX_BINDIR"] = f.dir
	r := f.newRel("2.1.100")
	r.bin = confinedAgent("2.1.100", hostMnt)
	r.builds[f.platform] = r.bin
	f.publish(r)
	f.mustRun("2.1.100")
	want := []string{bindir.PrivateDir, bindir.StateName, "claude", "claude.2.1.100"}
	sort.Strings(want)
	if diff := cmp.Diff(want, names(t, f.dir)); diff != "" {
		t.Errorf("bin dir (-want +got):\n%s", diff)
	}
}
