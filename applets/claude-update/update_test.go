package claudeupdate

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"

	"github.com/claude-sandbox/claude-sandbox/internal/bindir"
	"github.com/claude-sandbox/claude-sandbox/internal/release"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

func TestLatest(t *testing.T) {
	f := newFixture(t)
	f.release("2.1.100")
	f.channel("latest", "2.1.100\n")
	out := f.mustRun()
	if want := "downloading " + f.binURL("2.1.100") + " (0.3 MB)\n"; !strings.HasPrefix(out, want) {
		t.Errorf("output %q does not start with %q", out, want)
	}
	if !strings.HasSuffix(out, "installed 2.1.100 in "+f.dir+"\n") {
		t.Errorf("output = %q", out)
	}
	if got := f.current(); got != "claude.2.1.100" {
		t.Errorf("claude -> %s, want claude.2.1.100", got)
	}
	data, _ := os.ReadFile(filepath.Join(f.dir, "claude"))
	if string(data) != string(fakeAgent("2.1.100", agentSize)) {
		t.Errorf("installed binary differs from the published one")
	}
	fi, _ := os.Stat(filepath.Join(f.dir, "claude.2.1.100"))
	if fi.Mode().Perm() != 0o755 {
		t.Errorf("mode %v, want 0755", fi.Mode())
	}
	if f.previous() != "" {
		t.Errorf("claude.previous exists after the first install")
	}
}

func TestStableAndPinned(t *testing.T) {
	f := newFixture(t)
	f.release("2.1.90")
	f.release("2.1.95")
	f.release("2.1.100")
	f.channel("latest", "2.1.100")
	f.channel("stable", "2.1.90\n")
	f.mustRun("stable")
	if got := f.current(); got != "claude.2.1.90" {
		t.Fatalf("after stable: claude -> %s", got)
	}
	out := f.mustRun("2.1.95")
	if !strings.HasSuffix(out, "installed 2.1.95 (previous: 2.1.90)\n") {
		t.Errorf("output = %q", out)
	}
	if f.current() != "claude.2.1.95" || f.previous() != "claude.2.1.90" {
		t.Errorf("claude -> %s, previous -> %s", f.current(), f.previous())
	}
	if f.sawRequest("/claude-code-releases/latest") {
		t.Errorf("a pinned version read the latest channel")
	}
}

func TestAlreadyInstalled(t *testing.T) {
	f := newFixture(t)
	f.release("2.1.100")
	f.channel("latest", "2.1.100")
	f.mustRun()
	before := f.snapshot()
	out := f.mustRun()
	if out != "2.1.100 is already installed and current\n" {
		t.Errorf("output = %q", out)
	}
	if n := f.hits("/claude-code-releases/2.1.100/linux-x64/claude"); n != 1 {
		t.Errorf("binary downloaded %d times, want 1", n)
	}
	f.assertUnchanged(before)
	// --force downloads again.
	f.mustRun("--force")
	if n := f.hits("/claude-code-releases/2.1.100/linux-x64/claude"); n != 2 {
		t.Errorf("with --force: binary downloaded %d times, want 2", n)
	}
	if f.current() != "claude.2.1.100" || f.previous() != "" {
		t.Errorf("after --force: claude -> %s, previous -> %q", f.current(), f.previous())
	}
}

func TestCorruptInstalledCopyIsReplaced(t *testing.T) {
	f := newFixture(t)
	f.release("2.1.90")
	f.release("2.1.100")
	f.mustRun("2.1.100")
	f.mustRun("2.1.90")
	bad := fakeAgent("2.1.100", 10)
	os.WriteFile(filepath.Join(f.dir, "claude.2.1.100"), bad, 0o755)
	out := f.mustRun("2.1.100")
	want := filepath.Join(f.dir, "claude.2.1.100") + " does not match its recorded sha256 (got " + sha(bad) + ", 10 bytes; recorded " + sha(fakeAgent("2.1.100", agentSize)) + ", 262144 bytes); downloading it again\n"
	if !strings.HasPrefix(out, want) {
		t.Errorf("output = %q, want prefix %q", out, want)
	}
	data, _ := os.ReadFile(filepath.Join(f.dir, "claude.2.1.100"))
	if len(data) != agentSize {
		t.Errorf("corrupt copy kept (%d bytes)", len(data))
	}
}

// TestChannelDowngradeRefused: a channel that points below the highest
// version installed here (a mirror replaying an old channel file, or
// upstream rolling back) is not followed without --allow-downgrade.
func TestChannelDowngradeRefused(t *testing.T) {
	f := newFixture(t)
	f.release("2.1.95")
	f.release("2.1.100")
	f.channel("latest", "2.1.100")
	f.mustRun()
	f.channel("latest", "2.1.95")
	out, code, msg := f.runCode("--check")
	if want := "latest is 2.1.95, lower than 2.1.100 installed here before: not an update (claude-update refuses it without --allow-downgrade)\n"; code != 0 || out != want || msg != "" {
		t.Errorf("--check = %d, %q, %q; want 0, %q", code, out, msg, want)
	}
	before := f.snapshot()
	_, msg = f.run()
	if want := "latest points to 2.1.95, lower than 2.1.100 installed here before: refusing to downgrade (a rolled-back or replayed channel?); install 2.1.95 by name or pass --allow-downgrade to follow it"; msg != want {
		t.Errorf("got %q, want %q", msg, want)
	}
	f.assertUnchanged(before)
	if n := f.hits(f.binURL("2.1.95")[len(f.srv.URL):]); n != 0 {
		t.Errorf("2.1.95 downloaded %d times", n)
	}
	out = f.mustRun("--allow-downgrade")
	if !strings.HasPrefix(out, "latest points to 2.1.95, lower than 2.1.100 installed here before; following it (--allow-downgrade)\n") {
		t.Errorf("output = %q", out)
	}
	if f.current() != "claude.2.1.95" || f.previous() != "claude.2.1.100" {
		t.Errorf("claude -> %s, previous -> %s", f.current(), f.previous())
	}
	// Where the channel is now is current: nothing to refuse.
	if out := f.mustRun(); out != "2.1.95 is already installed and current\n" {
		t.Errorf("output = %q", out)
	}
	// By name and by --rollback, lower versions stay reachable.
	f.mustRun("--rollback")
	f.mustRun("2.1.95")
	if f.current() != "claude.2.1.95" {
		t.Errorf("claude -> %s", f.current())
	}
}

// TestDowngradeWithoutState: versions installed by an older
// claude-update (no state file) count as installed here.
func TestDowngradeWithoutState(t *testing.T) {
	f := newFixture(t)
	f.release("2.1.95")
	f.release("2.1.100")
	f.mustRun("2.1.100")
	if err := os.Remove(filepath.Join(f.dir, bindir.StateName)); err != nil {
		t.Fatal(err)
	}
	f.channel("latest", "2.1.95")
	_, msg := f.run()
	if want := "latest points to 2.1.95, lower than 2.1.100 installed here before: refusing to downgrade (a rolled-back or replayed channel?); install 2.1.95 by name or pass --allow-downgrade to follow it"; msg != want {
		t.Errorf("got %q, want %q", msg, want)
	}
}

// TestSignedBuildDateDowngrade: a channel naming a higher version whose
// signed manifest was built before the one installed is refused too.
func TestSignedBuildDateDowngrade(t *testing.T) {
	f := newFixture(t)
	r := f.newRel("2.1.100")
	r.buildDate = "2025-06-01T00:00:00Z"
	f.publish(r)
	r = f.newRel("2.1.101")
	r.buildDate = "2025-05-01T00:00:00Z"
	f.publish(r)
	f.channel("latest", "2.1.100")
	f.mustRun()
	f.channel("latest", "2.1.101")
	before := f.snapshot()
	_, msg := f.run()
	if want := "latest points to 2.1.101, whose signed manifest was built 2025-05-01T00:00:00Z, before 2025-06-01T00:00:00Z of a version installed here: refusing to downgrade; install 2.1.101 by name or pass --allow-downgrade to follow it"; msg != want {
		t.Errorf("got %q, want %q", msg, want)
	}
	f.assertUnchanged(before)
	f.mustRun("2.1.101")
	if f.current() != "claude.2.1.101" {
		t.Errorf("claude -> %s", f.current())
	}
	// The channel pointing at what is current is no downgrade.
	if out := f.mustRun(); out != "2.1.101 is already installed and current\n" {
		t.Errorf("output = %q", out)
	}
}

func TestRollback(t *testing.T) {
	f := newFixture(t)
	f.release("2.1.95")
	f.release("2.1.100")
	f.mustRun("2.1.95")
	before := f.snapshot()
	_, msg := f.run("--rollback")
	if want := "no previous version to roll back to (current: 2.1.95)"; msg != want {
		t.Errorf("--rollback with one version: %q, want %q", msg, want)
	}
	f.assertUnchanged(before)
	f.mustRun("2.1.100")
	out := f.mustRun("--rollback")
	if out != "rolled back to 2.1.95 (was 2.1.100)\n" {
		t.Errorf("output = %q", out)
	}
	if f.current() != "claude.2.1.95" || f.previous() != "claude.2.1.100" {
		t.Errorf("claude -> %s, previous -> %s", f.current(), f.previous())
	}
	// Rolling back again returns to where we were.
	f.mustRun("--rollback")
	if f.current() != "claude.2.1.100" || f.previous() != "claude.2.1.95" {
		t.Errorf("second rollback: claude -> %s, previous -> %s", f.current(), f.previous())
	}
	out = f.mustRun("--list")
	if want := "* 2.1.100 (current)\n  2.1.95 (previous)\n"; out != want {
		t.Errorf("--list = %q, want %q", out, want)
	}
	// A previous binary changed since it was verified is not run or
	// switched to.
	bad := script("touch "+filepath.Join(f.home, "ran")+"; echo '2.1.95 (Claude Code)'", 0)
	os.WriteFile(filepath.Join(f.dir, "claude.2.1.95"), bad, 0o755)
	before = f.snapshot()
	_, msg = f.run("--rollback")
	if want := filepath.Join(f.dir, "claude.2.1.95") + " does not match its recorded sha256 (got " + sha(bad) + ", " + strconv.Itoa(len(bad)) + " bytes; recorded " + sha(fakeAgent("2.1.95", agentSize)) + ", 262144 bytes): install it again with claude-update 2.1.95"; msg != want {
		t.Errorf("rollback to a changed binary: %q, want %q", msg, want)
	}
	f.assertUnchanged(before)
	if _, err := os.Stat(filepath.Join(f.home, "ran")); err == nil {
		t.Errorf("the changed binary ran")
	}
}

func TestPrune(t *testing.T) {
	f := newFixture(t)
	for _, v := range []string{"2.1.90", "2.1.95", "2.1.100", "2.1.101"} {
		f.release(v)
	}
	f.mustRun("2.1.90")
	f.mustRun("2.1.95")
	if diff := cmp.Diff([]string{"claude.2.1.90", "claude.2.1.95"}, f.installed()); diff != "" {
		t.Fatalf("after two installs (-want +got):\n%s", diff)
	}
	f.mustRun("--keep", "3", "2.1.100")
	if diff := cmp.Diff([]string{"claude.2.1.100", "claude.2.1.90", "claude.2.1.95"}, f.installed()); diff != "" {
		t.Fatalf("--keep 3 (-want +got):\n%s", diff)
	}
	out := f.mustRun("2.1.101")
	if !strings.HasSuffix(out, "installed 2.1.101 (previous: 2.1.100)\nremoved 2.1.95\nremoved 2.1.90\n") {
		t.Errorf("output = %q", out)
	}
	if diff := cmp.Diff([]string{"claude.2.1.100", "claude.2.1.101"}, f.installed()); diff != "" {
		t.Errorf("after the fourth (-want +got):\n%s", diff)
	}
	// --keep 1 still keeps the previous one.
	f.release("2.1.102")
	f.mustRun("--keep", "1", "2.1.102")
	if diff := cmp.Diff([]string{"claude.2.1.101", "claude.2.1.102"}, f.installed()); diff != "" {
		t.Errorf("--keep 1 (-want +got):\n%s", diff)
	}
}

func TestStaleTempRemoved(t *testing.T) {
	f := newFixture(t)
	f.release("2.1.100")
	os.MkdirAll(f.dir, 0o755)
	stale := filepath.Join(f.dir, bindir.TempPrefix+"123456")
	os.WriteFile(stale, []byte("half a binary"), 0o644)
	f.mustRun("2.1.100")
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale temporary file still there: %v", err)
	}
}

func TestCheck(t *testing.T) {
	f := newFixture(t)
	f.release("2.1.100")
	f.channel("latest", "2.1.100")
	out, code, msg := f.runCode("--check")
	if want := "latest is 2.1.100; nothing is installed in " + f.dir + "\n"; code != 100 || out != want || msg != "" {
		t.Errorf("--check on empty dir = %d, %q, %q; want 100, %q", code, out, msg, want)
	}
	f.mustRun()
	out, code, _ = f.runCode("--check")
	if code != 0 || out != "2.1.100 is current (latest)\n" {
		t.Errorf("--check = %d, %q; want 0", code, out)
	}
	f.channel("latest", "2.1.101")
	before := f.snapshot()
	out, code, _ = f.runCode("--check")
	if want := "latest is 2.1.101, newer than the current 2.1.100\n"; code != 100 || out != want {
		t.Errorf("--check = %d, %q; want 100, %q", code, out, want)
	}
	f.assertUnchanged(before)
	f.channel("latest", "<html>")
	_, code, msg = f.runCode("--check")
	if want := f.base + `/latest: not a version: <html> (a captive portal or proxy page?)`; code != 1 || msg != want {
		t.Errorf("--check = %d, %q; want 1, %q", code, msg, want)
	}
}

func TestUnsignedOldVersion(t *testing.T) {
	f := newFixture(t)
	r := f.newRel("2.1.50")
	r.signer = nil
	f.publish(r)
	before := f.snapshot()
	_, msg := f.run("2.1.50")
	if want := "2.1.50 predates signed manifests (2.1.89): rerun with --allow-unsigned to install it on its sha256 alone"; msg != want {
		t.Errorf("got %q, want %q", msg, want)
	}
	f.assertUnchanged(before)
	out := f.mustRun("--allow-unsigned", "2.1.50")
	if !strings.HasPrefix(out, "2.1.50 predates signed manifests; checking its sha256 only (--allow-unsigned)\n") {
		t.Errorf("output = %q", out)
	}
	// --allow-unsigned does not excuse a missing signature where one is due.
	r = f.newRel("2.1.100")
	r.signer = nil
	f.publish(r)
	_, msg = f.run("--allow-unsigned", "2.1.100")
	if want := "manifest.json of 2.1.100 is not signed (GET " + f.base + "/2.1.100/manifest.json.sig: HTTP 404 Not Found); versions from 2.1.89 on must be"; msg != want {
		t.Errorf("got %q, want %q", msg, want)
	}
}

// TestFailures installs 2.1.90 then 2.1.95, then tries 2.1.100 published
// wrongly; every failure must leave the bin dir as it was.
func TestFailures(t *testing.T) {
	type tc struct {
		name  string
		setup func(f *fixture)
		args  []string
		want  func(f *fixture) string
	}
	cutHalf := func(data []byte, honourRange bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if honourRange && r.Header.Get("Range") != "" {
				serveBytes(w, r, data)
				return
			}
			w.Header().Set("Content-Length", strconv.Itoa(len(data)))
			w.WriteHeader(http.StatusOK)
			w.Write(data[:len(data)/2])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
	}
	tests := []tc{
		{
			name:  "signature missing",
			setup: func(f *fixture) { r := f.newRel("2.1.100"); r.signer = nil; f.publish(r) },
			want: func(f *fixture) string {
				return "manifest.json of 2.1.100 is not signed (GET " + f.base + "/2.1.100/manifest.json.sig: HTTP 404 Not Found); versions from 2.1.89 on must be"
			},
		},
		{
			name:  "signature invalid",
			setup: func(f *fixture) { r := f.newRel("2.1.100"); r.tamper = true; f.publish(r) },
			want: func(f *fixture) string {
				return "manifest.json of 2.1.100: signature invalid: openpgp: invalid signature: EdDSA verification failure"
			},
		},
		{
			name:  "signed by another key",
			setup: func(f *fixture) { r := f.newRel("2.1.100"); r.signer = f.other; f.publish(r) },
			want: func(f *fixture) string {
				return "manifest.json of 2.1.100: signature invalid: openpgp: signature made by unknown entity"
			},
		},
		{
			name: "key fingerprint mismatch",
			setup: func(f *fixture) {
				r := f.newRel("2.1.100")
				r.signer = f.other
				f.publish(r)
				f.set("/keys/claude-code.asc", f.otherKF)
			},
			want: func(f *fixture) string {
				return f.srv.URL + "/keys/claude-code.asc: signing key fingerprint mismatch: got " + f.otherFP + ", want " + f.fp
			},
		},
		{
			name: "signature of another version's manifest",
			setup: func(f *fixture) {
				r := f.newRel("2.1.100")
				r.manifest = f.manifestJSON(f.newRel("2.1.95"))
				f.publish(r)
			},
			want: func(f *fixture) string { return `manifest.json of 2.1.100 is for version 2.1.95` },
		},
		{
			name: "checksum wrong",
			setup: func(f *fixture) {
				r := f.newRel("2.1.100")
				r.bin = fakeAgent("2.1.666", agentSize)
				f.publish(r)
			},
			want: func(f *fixture) string {
				return "claude 2.1.100 (linux-x64): sha256 mismatch: got " + sha(fakeAgent("2.1.666", agentSize)) + ", manifest says " + sha(fakeAgent("2.1.100", agentSize))
			},
		},
		{
			name:  "size larger in manifest",
			setup: func(f *fixture) { r := f.newRel("2.1.100"); r.sizeDelta = 10; f.publish(r) },
			want: func(f *fixture) string {
				return "claude 2.1.100 (linux-x64): size mismatch: got 262144 bytes, manifest says 262154"
			},
		},
		{
			name:  "size smaller in manifest",
			setup: func(f *fixture) { r := f.newRel("2.1.100"); r.sizeDelta = -10; f.publish(r) },
			want: func(f *fixture) string {
				return "claude 2.1.100 (linux-x64): size mismatch: got more than 262134 bytes, manifest says 262134"
			},
		},
		{
			name: "truncated body",
			setup: func(f *fixture) {
				f.release("2.1.100")
				f.handle("/claude-code-releases/2.1.100/linux-x64/claude", cutHalf(fakeAgent("2.1.100", agentSize), false))
			},
			want: func(f *fixture) string {
				return "GET " + f.binURL("2.1.100") + ": body cut after 131072 of 262144 bytes: unexpected EOF (gave up after 2 resumes)"
			},
		},
		{
			name: "HTML channel file",
			setup: func(f *fixture) {
				f.channel("latest", "<!DOCTYPE html><html><head><title>Hotel Wi-Fi login</title></head></html>")
			},
			want: func(f *fixture) string {
				return f.base + `/latest: not a version: "<!DOCTYPE html><html><head><title>Hotel "... (a captive portal or proxy page?)`
			},
		},
		{
			name: "platform missing",
			setup: func(f *fixture) {
				r := f.newRel("2.1.100")
				delete(r.builds, "linux-x64")
				f.publish(r)
			},
			want: func(f *fixture) string {
				return "2.1.100 has no build for linux-x64; 2.1.100 ships: darwin-arm64, linux-arm64"
			},
		},
		{
			name: "smoke test prints another version",
			setup: func(f *fixture) {
				r := f.newRel("2.1.100")
				r.bin = fakeAgent("2.1.99", agentSize)
				r.builds["linux-x64"] = r.bin
				f.publish(r)
			},
			want: func(f *fixture) string {
				return `smoke test of 2.1.100 failed: --version printed 2.1.99 (Claude Code), want 2.1.100 (Claude Code)`
			},
		},
		{
			// In bwrap's user namespace it says what bwrap says when it
			// cannot set up; outside bwrap it would pass. It must never
			// get that second run.
			name: "smoke test binary fakes a bwrap failure",
			setup: func(f *fixture) {
				r := f.newRel("2.1.100")
				r.bin = script(`read -r a b c </proc/self/uid_map
if [ "$c" = 4294967295 ]; then
	echo '2.1.100 (Claude Code)'
	exit 0
fi
echo 'bwrap: Creating new namespace failed: Operation not permitted' >&2
exit 1`, agentSize)
				r.builds["linux-x64"] = r.bin
				f.publish(r)
			},
			want: func(f *fixture) string {
				return "smoke test of 2.1.100 failed: --version: exit status 1: bwrap: Creating new namespace failed: Operation not permitted"
			},
		},
		{
			name: "smoke test crashes",
			setup: func(f *fixture) {
				r := f.newRel("2.1.100")
				// The kernel's own SIGILL: one the program sends itself is
				// ignored, as it is PID 1 of its namespace.
				r.bin = illegalInstruction(f.t)
				r.builds["linux-x64"] = r.bin
				f.publish(r)
			},
			want: func(f *fixture) string {
				return "smoke test of 2.1.100 failed: --version: signal: illegal instruction"
			},
		},
		{
			name: "HTTP error",
			setup: func(f *fixture) {
				f.release("2.1.100")
				f.handle("/claude-code-releases/2.1.100/manifest.json", func(w http.ResponseWriter, r *http.Request) {
					http.Error(w, "no", http.StatusForbidden)
				})
			},
			want: func(f *fixture) string { return "GET " + f.base + "/2.1.100/manifest.json: HTTP 403 Forbidden" },
		},
		{
			name: "server error persists",
			setup: func(f *fixture) {
				f.handle("/claude-code-releases/latest", func(w http.ResponseWriter, r *http.Request) {
					http.Error(w, "down", http.StatusServiceUnavailable)
				})
			},
			want: func(f *fixture) string {
				return "GET " + f.base + "/latest: HTTP 503 Service Unavailable (after 3 attempts)"
			},
		},
		{
			name: "network unreachable",
			setup: func(f *fixture) {
				f.baseOverr = "https://127.0.0.1:1/claude-code-releases"
			},
			want: func(f *fixture) string {
				return "GET https://127.0.0.1:1/claude-code-releases/latest: dial tcp 127.0.0.1:1: connect: connection refused (after 3 attempts)"
			},
		},
		{
			name: "lock held",
			setup: func(f *fixture) {
				f.release("2.1.100")
				os.MkdirAll(filepath.Join(f.dir, bindir.PrivateDir), 0o700)
				lf, err := os.OpenFile(filepath.Join(f.dir, bindir.LockName), os.O_RDWR|os.O_CREATE, 0o600)
				if err != nil {
					f.t.Fatal(err)
				}
				f.t.Cleanup(func() { lf.Close() })
				if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
					f.t.Fatal(err)
				}
			},
			want: func(f *fixture) string {
				return "another claude-update is running (lock " + filepath.Join(f.dir, bindir.LockName) + " held)"
			},
		},
		{
			name: "registry tarball integrity wrong",
			args: []string{"--source", "npm", "--registry", "REGISTRY", "2.1.100"},
			setup: func(f *fixture) {
				tb := f.npmTarball("2.1.100", fakeAgent("2.1.100", agentSize))
				f.npmPublish(map[string]string{"latest": "2.1.100"}, npmVersion{version: "2.1.100", tarball: tb, integrity: sri([]byte("other"))})
			},
			want: func(f *fixture) string {
				tb := f.npmTarball("2.1.100", fakeAgent("2.1.100", agentSize))
				return "@anthropic-ai/claude-code-linux-x64@2.1.100: integrity mismatch: tarball is " + sri(tb) + ", packument says " + sri([]byte("other"))
			},
		},
		{
			name: "npm gzip bomb",
			args: []string{"--source", "npm", "--registry", "REGISTRY", "2.1.100"},
			setup: func(f *fixture) {
				// 1.07 GB of zeros in about 1 MB, as reported; under the
				// ceiling, so the header alone does not stop it.
				f.npmBomb("2.1.100", 0, serveTar("package/claude", 1_070_000_000))
			},
			want: func(f *fixture) string {
				return "@anthropic-ai/claude-code-linux-x64@2.1.100: tarball: unpacks to more than 32 times its compressed size (a gzip bomb?)"
			},
		},
		{
			name: "npm gzip bomb beyond unpackedSize",
			args: []string{"--source", "npm", "--registry", "REGISTRY", "2.1.100"},
			setup: func(f *fixture) {
				f.npmBomb("2.1.100", 300000, serveTar("package/claude", 1_070_000_000))
			},
			want: func(f *fixture) string {
				return "@anthropic-ai/claude-code-linux-x64@2.1.100: tarball: package/claude is 1070000000 bytes, more than 300000 (the packument's unpackedSize)"
			},
		},
		{
			name: "npm endless tar entry",
			args: []string{"--source", "npm", "--registry", "REGISTRY", "2.1.100"},
			setup: func(f *fixture) {
				f.npmBomb("2.1.100", 0, serveTar("package/claude", 1<<40))
			},
			want: func(f *fixture) string {
				return "@anthropic-ai/claude-code-linux-x64@2.1.100: tarball: package/claude is 1099511627776 bytes, more than 1073741824 (claude-update's ceiling)"
			},
		},
		{
			name: "npm endless entry before the binary",
			args: []string{"--source", "npm", "--registry", "REGISTRY", "2.1.100"},
			setup: func(f *fixture) {
				f.npmBomb("2.1.100", 0, serveTar("package/README.md", 1<<30))
			},
			want: func(f *fixture) string {
				return "@anthropic-ai/claude-code-linux-x64@2.1.100: tarball: unpacks to more than 32 times its compressed size (a gzip bomb?)"
			},
		},
		{
			name: "download never ends",
			args: []string{"--timeout", "2s", "2.1.100"},
			setup: func(f *fixture) {
				f.release("2.1.100")
				f.handle("/claude-code-releases/2.1.100/linux-x64/claude", drip)
			},
			want: func(f *fixture) string {
				return "claude-update did not finish within 2s (a stalled or endless download?); nothing changed: try again, or raise --timeout"
			},
		},
		{
			name: "registry lacks the platform package",
			args: []string{"--source", "npm", "--registry", "REGISTRY"},
			setup: func(f *fixture) {
				f.npmPublish(map[string]string{"latest": "2.1.100"}, npmVersion{version: "2.1.100", tarball: f.npmTarball("2.1.100", fakeAgent("2.1.100", agentSize))})
				f.platform = "linux-x64-musl"
			},
			want: func(f *fixture) string {
				return "@anthropic-ai/claude-code@2.1.100 does not list @anthropic-ai/claude-code-linux-x64-musl in its optionalDependencies (no build for this platform?)"
			},
		},
		{
			name: "registry tarball without the binary",
			args: []string{"--source", "npm", "--registry", "REGISTRY"},
			setup: func(f *fixture) {
				tb := tgz(f.t, map[string][]byte{"package/package.json": []byte("{}")})
				f.npmPublish(map[string]string{"latest": "2.1.100"}, npmVersion{version: "2.1.100", tarball: tb})
			},
			want: func(f *fixture) string {
				return "@anthropic-ai/claude-code-linux-x64@2.1.100: tarball: no package/claude"
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.release("2.1.90")
			f.release("2.1.95")
			f.mustRun("2.1.90")
			f.mustRun("2.1.95")
			f.channel("latest", "2.1.100")
			tt.setup(f)
			before := f.snapshot()
			args := tt.args
			for i, a := range args {
				if a == "REGISTRY" {
					args[i] = f.registry
				}
			}
			out, msg := f.run(args...)
			if want := tt.want(f); msg != want {
				t.Errorf("error line:\n got %q\nwant %q\noutput: %s", msg, want, out)
			}
			f.assertUnchanged(before)
			if f.current() != "claude.2.1.95" || f.previous() != "claude.2.1.90" {
				t.Errorf("claude -> %s, previous -> %s", f.current(), f.previous())
			}
			data, _ := os.ReadFile(filepath.Join(f.dir, "claude"))
			if string(data) != string(fakeAgent("2.1.95", agentSize)) {
				t.Errorf("current binary changed")
			}
		})
	}
}

func sha(b []byte) string {
	return hashHex(b)
}

func TestResume(t *testing.T) {
	for _, honourRange := range []bool{true, false} {
		name := "range"
		if !honourRange {
			name = "restart"
		}
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.release("2.1.100")
			data := fakeAgent("2.1.100", agentSize)
			var once sync.Once
			f.handle("/claude-code-releases/2.1.100/linux-x64/claude", func(w http.ResponseWriter, r *http.Request) {
				first := false
				once.Do(func() { first = true })
				if !first {
					if !honourRange {
						r.Header.Del("Range")
					}
					serveBytes(w, r, data)
					return
				}
				w.Header().Set("Content-Length", strconv.Itoa(len(data)))
				w.Header().Set("ETag", `"`+sha(data)[:16]+`"`)
				w.WriteHeader(http.StatusOK)
				w.Write(data[:100000])
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler)
			})
			f.mustRun("2.1.100")
			if f.current() != "claude.2.1.100" {
				t.Fatalf("claude -> %s", f.current())
			}
			got, _ := os.ReadFile(filepath.Join(f.dir, "claude.2.1.100"))
			if string(got) != string(data) {
				t.Fatalf("resumed binary differs")
			}
			if saw := f.sawRequest("/claude-code-releases/2.1.100/linux-x64/claude bytes=100000-"); !saw {
				t.Errorf("no Range request from byte 100000: %q", f.requests)
			}
		})
	}
}

func TestConcurrentRuns(t *testing.T) {
	f := newFixture(t)
	f.release("2.1.100")
	data := fakeAgent("2.1.100", agentSize)
	reached, proceed := make(chan struct{}), make(chan struct{})
	f.handle("/claude-code-releases/2.1.100/linux-x64/claude", func(w http.ResponseWriter, r *http.Request) {
		close(reached)
		<-proceed
		serveBytes(w, r, data)
	})
	errc := make(chan string)
	go func() {
		_, msg := f.run("2.1.100")
		errc <- msg
	}()
	<-reached
	before := f.snapshot()
	_, msg := f.run("2.1.100")
	if want := "another claude-update is running (lock " + filepath.Join(f.dir, bindir.LockName) + " held)"; msg != want {
		t.Errorf("second run: %q, want %q", msg, want)
	}
	f.assertUnchanged(before)
	close(proceed)
	if msg := <-errc; msg != "" {
		t.Fatalf("first run: %s", msg)
	}
	if f.current() != "claude.2.1.100" {
		t.Errorf("claude -> %s", f.current())
	}
}

func TestMusl(t *testing.T) {
	f := newFixture(t)
	sh := testutil.ELF(t, "/lib/ld-musl-x86_64.so.1")
	p, err := release.Platform("amd64", sh)
	if err != nil {
		t.Fatal(err)
	}
	f.platform = p
	r := f.newRel("2.1.100")
	r.builds["linux-x64"] = []byte("glibc build")
	f.publish(r)
	f.mustRun("2.1.100")
	if !f.sawRequest("/claude-code-releases/2.1.100/linux-x64-musl/claude") {
		t.Errorf("musl build not fetched: %q", f.requests)
	}
	if f.sawRequest("/claude-code-releases/2.1.100/linux-x64/claude") {
		t.Errorf("glibc build fetched on a musl host")
	}
}

func TestNpm(t *testing.T) {
	f := newFixture(t)
	tb100 := f.npmTarball("2.1.100", fakeAgent("2.1.100", agentSize))
	tb101 := f.npmTarball("2.1.101", fakeAgent("2.1.101", agentSize))
	tb102 := f.npmTarball("2.1.102", fakeAgent("2.1.102", agentSize))
	// The platform package's own latest is ahead of the main package's, as
	// seen upstream (2.1.333 against 2.1.332): npm installs what the main
	// package's latest depends on.
	f.npmPublish(map[string]string{"latest": "2.1.102"},
		npmVersion{version: "2.1.100", tarball: tb100}, npmVersion{version: "2.1.101", tarball: tb101}, npmVersion{version: "2.1.102", tarball: tb102})
	f.npmMain(map[string]string{"latest": "2.1.101"}, map[string]string{"2.1.100": "2.1.100", "2.1.101": "2.1.101"})
	// The registry comes from ~/.npmrc of the configured home.
	os.WriteFile(filepath.Join(f.home, ".npmrc"), []byte("fund=false\nregistry="+f.registry+"\n"), 0o644)
	out := f.mustRun("--source", "npm", "2.1.100")
	if !strings.HasSuffix(out, "installed 2.1.100 in "+f.dir+"\n") {
		t.Errorf("output = %q", out)
	}
	f.mustRun("--source", "npm")
	if f.current() != "claude.2.1.101" || f.previous() != "claude.2.1.100" {
		t.Errorf("claude -> %s, previous -> %s", f.current(), f.previous())
	}
	got, _ := os.ReadFile(filepath.Join(f.dir, "claude"))
	if string(got) != string(fakeAgent("2.1.101", agentSize)) {
		t.Errorf("installed binary is not package/claude")
	}
	// The scoped names are escaped as npm does.
	for _, want := range []string{"/npm/@anthropic-ai%2fclaude-code", "/npm/@anthropic-ai%2fclaude-code-linux-x64"} {
		found := false
		for _, p := range f.rawPaths {
			found = found || p == want
		}
		if !found {
			t.Errorf("no request for %s: %q", want, f.rawPaths)
		}
	}
	out = f.mustRun("--source", "npm", "--check")
	if out != "2.1.101 is current (latest)\n" {
		t.Errorf("--check = %q", out)
	}
	_, msg := f.run("--source", "npm", "stable")
	if want := `npm has no stable channel: @anthropic-ai/claude-code has no dist-tag "stable" (it has: latest); use latest, a version, or --source release for stable`; msg != want {
		t.Errorf("stable on npm: %q, want %q", msg, want)
	}
	// The environment wins over ~/.npmrc.
	f.env["npm_config_registry"] = "https://127.0.0.1:1/"
	_, msg = f.run("--source", "npm", "--check")
	if want := "GET https://127.0.0.1:1/@anthropic-ai%2fclaude-code: dial tcp 127.0.0.1:1: connect: connection refused (after 3 attempts)"; msg != want {
		t.Errorf("npm_config_registry ignored: %q, want %q", msg, want)
	}
}

func TestUsage(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bad target", []string{"1.2"}, `"1.2" is neither a channel (latest, stable) nor a version like 2.1.197`},
		{"unknown flag", []string{"--bogus"}, "unknown flag --bogus (see --help)"},
		{"two modes", []string{"--list", "--rollback"}, "--list and --rollback can't be used together (see --help)"},
		{"rollback with version", []string{"--rollback", "2.1.1"}, "--rollback takes no channel or version"},
		{"keep zero", []string{"--keep", "0"}, "--keep must be at least 1"},
		{"registry without npm", []string{"--registry", "https://r.example/"}, "--registry applies to --source npm"},
		{"bad source", []string{"--source", "ftp"}, `--source must be release or npm, not ftp`},
		{"two targets", []string{"latest", "stable"}, `unexpected argument stable (see --help)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.runErr(tt.args...)
			if code := cliCode(err); code != 2 || err.Error() != tt.want {
				t.Errorf("claude-update %q = %d %v; want 2 %q", tt.args, code, err, tt.want)
			}
		})
	}
	f.env["CLAUDE_SBX_BINDIR"] = "relative/bin"
	if _, err := f.runErr("--list"); cliCode(err) != 2 || err.Error() != "CLAUDE_SBX_BINDIR=relative/bin is not an absolute path" {
		t.Errorf("relative bin dir: %v", err)
	}
}

// nxdomain starts a DNS server that answers every query NXDOMAIN and
// returns a resolver that asks it, and the number of queries so far.
func nxdomain(t *testing.T) (*net.Resolver, func() int) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	n := 0
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		mu.Lock()
		n++
		mu.Unlock()
		m := new(dns.Msg)
		m.SetRcode(r, dns.RcodeNameError)
		w.WriteMsg(m)
	})}
	go srv.ActivateAndServe()
	t.Cleanup(func() { srv.Shutdown() })
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
	return r, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// TestReleaseHostDoesNotResolve: a first run on a network whose resolver
// says the release host does not exist is not retried, and its last line
// says that --source npm installs the same agent from the npm registry.
func TestReleaseHostDoesNotResolve(t *testing.T) {
	f := newFixture(t)
	r, queries := nxdomain(t)
	f.resolver = r
	f.baseOverr = "https://downloads.claude.ai.example/claude-code-releases"
	var stderr bytes.Buffer
	_, err := f.runErrTo(&stderr)
	want := "GET https://downloads.claude.ai.example/claude-code-releases/latest: lookup downloads.claude.ai.example: no such host (not retried: the name does not resolve on this network); " +
		"claude-update --source npm installs the same agent from the npm registry (npm's configuration, or --registry URL); to make that the default, add the line \"source npm\" to " + f.conf + " (owned by root, writable by no one else)"
	if err == nil || err.Error() != want {
		t.Errorf("claude-update = %v\nwant %s", err, want)
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr = %q, want no retries", stderr.String())
	}
	if queries() == 0 {
		t.Errorf("the resolver was not asked")
	}
}
