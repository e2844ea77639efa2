//go:build linux

package claude_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/sandbox"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// projectHome returns the host directory of the sandbox home of a start
// in dir.
func projectHome(t *testing.T, s *testutil.Sandbox, dir string) string {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(s.Home, ".claude-homes", sandbox.ProjectHomeName(dir, uint64(st.Dev), st.Ino))
}

// shellIn runs `claude --shell -c script` with dir as the working
// directory.
func shellIn(t *testing.T, s *testutil.Sandbox, dir, script string) testutil.Result {
	t.Helper()
	cmd := s.Command("--shell", "-c", script)
	cmd.Dir = dir
	return testutil.RunCommand(t, cmd)
}

// TestProjectsHaveTheirOwnHome performs the attack: the agent in project A
// writes a ~/.profile and a ~/.claude/settings.json hook; neither may
// reach a session in project B (the login shell would run the profile, the
// agent the hook). The login is shared, and the common settings are there,
// read-only, in both. `home shared` brings back one home for all.
func TestProjectsHaveTheirOwnHome(t *testing.T) {
	s := testutil.NewSandbox(t)
	m := marker(t)
	a, b := filepath.Join(s.Home, "a"), filepath.Join(s.Home, "b")
	mkUserDir(t, s, a)
	mkUserDir(t, s, b)
	plant := `echo "echo PLANTED-` + m + `" >> ~/.profile && mkdir -p ~/.claude && ` +
		`echo '{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"echo HOOK-` + m + `"}]}]}}' > ~/.claude/settings.json && ` +
		`echo '{"claudeAiOauth":"` + m + `"}' > ~/.claude/.credentials.json`
	look := `cat ~/.claude/settings.json; cat ~/.claude/.credentials.json`
	mustOK(t, shellIn(t, s, a, plant))

	r := shellIn(t, s, b, look)
	mustOK(t, r)
	if strings.Contains(r.Stdout, "PLANTED-"+m) {
		t.Errorf("project A's ~/.profile ran in project B:\n%s", r.Stdout)
	}
	if strings.Contains(r.Stdout, "HOOK-"+m) {
		t.Errorf("project A's ~/.claude/settings.json is project B's:\n%s", r.Stdout)
	}
	if !strings.Contains(r.Stdout, `{"claudeAiOauth":"`+m+`"}`) {
		t.Errorf("the login written in project A is not project B's:\n%s", r.Stdout)
	}
	// Project A keeps its own.
	r = shellIn(t, s, a, look)
	mustOK(t, r)
	if !strings.Contains(r.Stdout, "PLANTED-"+m) || !strings.Contains(r.Stdout, "HOOK-"+m) {
		t.Errorf("project A's home did not persist:\n%s", r.Stdout)
	}
	if _, err := os.Stat(filepath.Join(projectHome(t, s, a), ".profile")); err != nil {
		t.Errorf("project A's home is not where its key says: %v", err)
	}

	// Settings for every project, from the host, read-only.
	common := filepath.Join(s.Home, ".claude-homes", "common")
	mkUserDir(t, s, common)
	writeUserFile(t, s, filepath.Join(common, "settings.json"), `{"common":"`+m+`"}`, 0o644)
	r = shellIn(t, s, b, `cat ~/.claude/settings.json; echo x > ~/.claude/settings.json`)
	if !strings.Contains(r.Stdout, `{"common":"`+m+`"}`) || !strings.Contains(r.Stderr, "Read-only file system") {
		t.Errorf("common settings in project B: %v\nwant them shown and read-only", r)
	}
	os.Remove(filepath.Join(common, "settings.json"))

	// home shared: one home for every project, as before.
	s.WriteConfig(t, "home shared\n")
	mustOK(t, shellIn(t, s, a, plant))
	r = shellIn(t, s, b, look)
	mustOK(t, r)
	if !strings.Contains(r.Stdout, "PLANTED-"+m) {
		t.Errorf("with home shared, project A's ~/.profile did not run in project B:\n%s", r.Stdout)
	}
	if _, err := os.Stat(filepath.Join(s.Home, ".claude-home", ".profile")); err != nil {
		t.Errorf("with home shared, the home is not ~/.claude-home: %v", err)
	}
}

// TestSharedLoginMigrated: the first start with per-project homes takes
// the login from the home every project shared before.
func TestSharedLoginMigrated(t *testing.T) {
	s := testutil.NewSandbox(t)
	m := marker(t)
	shared := filepath.Join(s.Home, ".claude-home")
	mkUserDir(t, s, filepath.Join(shared, ".claude"))
	s.User.Chown(t, shared)
	os.Chmod(shared, 0o700)
	writeUserFile(t, s, filepath.Join(shared, ".claude", ".credentials.json"), `{"old":"`+m+`"}`, 0o600)
	proj := filepath.Join(s.Home, "p")
	mkUserDir(t, s, proj)
	r := shellIn(t, s, proj, `cat ~/.claude/.credentials.json`)
	mustOK(t, r)
	if !strings.Contains(r.Stdout, `{"old":"`+m+`"}`) {
		t.Errorf("login in a new project home = %q, want the shared home's", r.Stdout)
	}
}

// TestSharedLoginHardlinkRefused: a login file with another name could be
// changed through it by whoever owns that name.
func TestSharedLoginHardlinkRefused(t *testing.T) {
	s := testutil.NewSandbox(t)
	proj := filepath.Join(s.Home, "p")
	mkUserDir(t, s, proj)
	mustOK(t, shellIn(t, s, proj, "true"))
	cred := filepath.Join(s.Home, ".claude-homes", "credentials.json")
	if err := os.Link(cred, filepath.Join(proj, "cred")); err != nil {
		t.Fatal(err)
	}
	r := shellIn(t, s, proj, "echo started")
	want := "claude: shared login " + cred + " has 2 links: another name could change it: make it a plain file (cp it aside and back)\n"
	if r.Code != 1 || r.Stderr != want {
		t.Errorf("hardlinked login: %v\nwant exit 1 and stderr %q", r, want)
	}
}
