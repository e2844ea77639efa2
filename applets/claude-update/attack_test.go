package claudeupdate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// plant writes a script as claude.<v> in dir that records that it ran (in
// marker) and answers --version like the agent.
func plant(t *testing.T, dir, v, marker string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := "#!/bin/sh\nid >" + marker + "\necho \"" + v + " (Claude Code)\"\n"
	if err := os.WriteFile(filepath.Join(dir, "claude."+v), []byte(s), 0o755); err != nil {
		t.Fatal(err)
	}
}

func assertNotRun(t *testing.T, marker string) {
	t.Helper()
	if data, err := os.ReadFile(marker); err == nil {
		t.Errorf("the planted binary ran: %s", strings.TrimSpace(string(data)))
	}
}

// TestD1Reproduction is the reported attack, as root: a bin dir made with
// mktemp -d (under the world-writable /tmp) holding a planted
// claude.<version> that the registry's latest names. It must be refused
// before anything runs.
func TestD1Reproduction(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFixture(t)
	tb := f.npmTarball("2.1.333", fakeAgent("2.1.333", agentSize))
	f.npmPublish(map[string]string{"latest": "2.1.333"}, npmVersion{version: "2.1.333", tarball: tb})
	dir, err := os.MkdirTemp("/tmp", "tmp.")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	fi, err := os.Lstat("/tmp")
	if err != nil || fi.Mode().Perm()&0o002 == 0 {
		testutil.Missing(t, "/tmp is not world-writable here (%v, %v)", fi, err)
	}
	marker := filepath.Join(t.TempDir(), "pwned")
	plant(t, dir, "2.1.333", marker)
	before := snapshot(t, dir)
	env := []string{"CLAUDE_SBX_BINDIR=" + dir, "NPM_CONFIG_GLOBALCONFIG=/nonexistent", "NPM_CONFIG_USERCONFIG=/nonexistent", "npm_config_cafile=" + f.certFile, "npm_config_registry=" + f.registry}
	code, out, errOut := runBinary(t, env, "--source", "npm")
	want := "claude-update: bin dir " + dir + " is unsafe for root: /tmp is writable by group or others (" + fi.Mode().String() + "): set CLAUDE_SBX_BINDIR to a directory that root owns and only root can write, in directories likewise (such as /opt/claude/bin)\n"
	if code != 1 || errOut != want {
		t.Errorf("claude-update --source npm = %d, %q, %q; want 1, %q", code, out, errOut, want)
	}
	assertNotRun(t, marker)
	if diff := snapshotDiff(before, snapshot(t, dir)); diff != "" {
		t.Errorf("bin dir changed:\n%s", diff)
	}
}

// TestPlantedBinaryNotTrusted: in a bin dir that passes the ownership
// check, a claude.<version> that claude-update has no record of verifying
// is neither run nor made current: it is downloaded again.
func TestPlantedBinaryNotTrusted(t *testing.T) {
	f := newFixture(t)
	f.dir = filepath.Join(testutil.RootOwnedDir(t), "bin")
	f.env["CLAUDE_SBX_BINDIR"] = f.dir
	f.root = os.Geteuid() == 0
	tb := f.npmTarball("2.1.333", fakeAgent("2.1.333", agentSize))
	f.npmPublish(map[string]string{"latest": "2.1.333"}, npmVersion{version: "2.1.333", tarball: tb})
	marker := filepath.Join(t.TempDir(), "pwned")
	plant(t, f.dir, "2.1.333", marker)
	out := f.mustRun("--source", "npm", "--registry", f.registry)
	if want := filepath.Join(f.dir, "claude.2.1.333") + " has no record of being verified; downloading it again\n"; !strings.HasPrefix(out, want) {
		t.Errorf("output = %q, want prefix %q", out, want)
	}
	assertNotRun(t, marker)
	if got, _ := os.ReadFile(filepath.Join(f.dir, "claude")); string(got) != string(fakeAgent("2.1.333", agentSize)) {
		t.Errorf("claude is not the registry's binary")
	}

	// Changed after it was verified: not "already installed".
	plant(t, f.dir, "2.1.333", marker)
	bad, _ := os.ReadFile(filepath.Join(f.dir, "claude.2.1.333"))
	out = f.mustRun("--source", "npm", "--registry", f.registry)
	want := filepath.Join(f.dir, "claude.2.1.333") + " does not match its recorded sha256 (got " + sha(bad) + ", " + itoa(len(bad)) + " bytes; recorded " + sha(fakeAgent("2.1.333", agentSize)) + ", 262144 bytes); downloading it again\n"
	if !strings.HasPrefix(out, want) {
		t.Errorf("output = %q, want prefix %q", out, want)
	}
	if !strings.HasSuffix(out, "reinstalled 2.1.333\n") {
		t.Errorf("output = %q", out)
	}
	assertNotRun(t, marker)
	if got, _ := os.ReadFile(filepath.Join(f.dir, "claude")); string(got) != string(fakeAgent("2.1.333", agentSize)) {
		t.Errorf("claude is not the registry's binary")
	}
}

// TestUnsafeBinDirAsRoot: running as root, a bin dir that another user
// owns, or that group or others can write, is refused with what to fix.
func TestUnsafeBinDirAsRoot(t *testing.T) {
	testutil.RequireRoot(t)
	base := testutil.RootOwnedDir(t)
	tests := []struct {
		name  string
		setup func(dir string)
		want  string
	}{
		{"group-writable", func(d string) { os.Chmod(d, 0o775) }, "bin dir @D is unsafe for root: @D is writable by group or others (drwxrwxr-x): chown root:root @D && chmod go-w @D, or set CLAUDE_SBX_BINDIR to a directory only root can write (such as /opt/claude/bin)"},
		{"owned by a user", func(d string) { os.Chown(d, 1234, 1234) }, "bin dir @D is unsafe for root: @D is owned by uid 1234, not root: chown root:root @D && chmod go-w @D, or set CLAUDE_SBX_BINDIR to a directory only root can write (such as /opt/claude/bin)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.root = true
			f.release("2.1.100")
			f.channel("latest", "2.1.100")
			f.dir = filepath.Join(base, strings.ReplaceAll(tt.name, " ", "-"))
			f.env["CLAUDE_SBX_BINDIR"] = f.dir
			if err := os.Mkdir(f.dir, 0o755); err != nil {
				t.Fatal(err)
			}
			tt.setup(f.dir)
			for _, args := range [][]string{nil, {"--rollback"}, {"--hold", "2.1.100"}} {
				_, msg := f.run(args...)
				if want := strings.ReplaceAll(tt.want, "@D", f.dir); msg != want {
					t.Errorf("claude-update %q: %q, want %q", args, msg, want)
				}
			}
			if ents, _ := os.ReadDir(f.dir); len(ents) != 0 {
				t.Errorf("bin dir holds %v", ents)
			}
		})
	}
}
