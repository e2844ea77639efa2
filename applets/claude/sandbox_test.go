//go:build linux

package claude_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/sandbox"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// These tests run the real binary as the unprivileged test user and check
// from inside the sandbox. They need root (to switch users) and bwrap.

func marker(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func mustOK(t *testing.T, r testutil.Result) {
	t.Helper()
	if r.Code != 0 {
		t.Fatalf("launcher failed: %v", r)
	}
}

func writeUserFile(t *testing.T, s *testutil.Sandbox, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	s.User.Chown(t, path)
}

func mkUserDir(t *testing.T, s *testutil.Sandbox, path string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
	s.User.Chown(t, path)
}

func TestRealHomeHidden(t *testing.T) {
	s := testutil.NewSandbox(t)
	writeUserFile(t, s, filepath.Join(s.Home, "bait-secret"), "secret-"+marker(t), 0o600)
	r := s.Shell(t, `cat ~/bait-secret; echo "cat=$?"; ls -A ~; echo "ls-end"; ls -A "$(dirname ~)"`)
	mustOK(t, r)
	if !strings.Contains(r.Stdout, "cat=1") || strings.Contains(r.Stdout, "secret-") {
		t.Errorf("bait file readable inside: %v", r)
	}
	home, _, _ := strings.Cut(r.Stdout, "ls-end")
	if strings.Contains(home, "bait-secret") {
		t.Errorf("real home listable inside: %v", r)
	}
	// Above the home only the home itself is there (no other users).
	if !strings.HasSuffix(strings.TrimSpace(r.Stdout), "ls-end\nhome") {
		t.Errorf("parent of home shows more than the home: %v", r)
	}
}

func TestSandboxHomePersists(t *testing.T) {
	s := testutil.NewSandbox(t)
	m := marker(t)
	r := s.Shell(t, `pwd; echo `+m+` > ~/persist`)
	mustOK(t, r)
	if got := strings.TrimSpace(r.Stdout); got != s.Home {
		t.Errorf("sandbox starts in %q, want %q", got, s.Home)
	}
	sh := projectHome(t, s, s.Home)
	b, err := os.ReadFile(filepath.Join(sh, "persist"))
	if err != nil || strings.TrimSpace(string(b)) != m {
		t.Fatalf("~/persist not in the sandbox home %s on the host: %q, %v", sh, b, err)
	}
	fi, err := os.Stat(sh)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("sandbox home mode = %v, %v; want 0700", fi.Mode(), err)
	}
	r = s.Shell(t, `cat ~/persist`)
	mustOK(t, r)
	if strings.TrimSpace(r.Stdout) != m {
		t.Errorf("second run reads %q, want %q", r.Stdout, m)
	}
}

func TestHostProcessesHidden(t *testing.T) {
	s := testutil.NewSandbox(t)
	m := marker(t)
	// A bait process of the same user on the host.
	bait := s.User.Command(s.Home, "/bin/bash", "-c", "exec -a bait-"+m+" sleep 600")
	if err := bait.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { bait.Process.Kill(); bait.Wait() }()
	pid := bait.Process.Pid
	r := s.Shell(t, fmt.Sprintf(`cat /proc/[0-9]*/cmdline | tr '\0' ' ' | grep -c "bai[t]-%s"; kill -0 %d; echo "kill=$?"`, m, pid))
	if !strings.HasPrefix(r.Stdout, "0\n") {
		t.Errorf("host bait process visible in /proc: %v", r)
	}
	if !strings.Contains(r.Stdout, "kill=1") || !strings.Contains(r.Stderr, "No such process") {
		t.Errorf("kill -0 of a host process did not fail with ESRCH: %v", r)
	}
	// The bait is still there: the test would pass vacuously otherwise.
	if err := bait.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("bait process gone: %v", err)
	}
}

// TestTmpIsBoundedTmpfs: by default the sandbox's /tmp is a tmpfs of
// sandbox.DefaultTmpSize, empty at every start; writing past its size
// fails with ENOSPC, and nothing of it lands in the host's /tmp.
func TestTmpIsBoundedTmpfs(t *testing.T) {
	s := testutil.NewSandbox(t)
	m := marker(t)
	bait := filepath.Join(os.TempDir(), "claude-sbx-bait-"+m)
	if err := os.WriteFile(bait, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(bait)
	r := s.Shell(t, `ls /tmp/claude-sbx-bait-`+m+`; echo "ls=$?"; stat -f -c %T /tmp; echo "size=$(( $(stat -f -c '%b*%S' /tmp) ))"; echo `+m+` > /tmp/keep-`+m)
	mustOK(t, r)
	if !strings.Contains(r.Stdout, "ls=2") {
		t.Errorf("host /tmp bait visible inside: %v", r)
	}
	if want := fmt.Sprintf("tmpfs\nsize=%d\n", sandbox.DefaultTmpSize); !strings.Contains(r.Stdout, want) {
		t.Errorf("/tmp inside: %v\nwant a tmpfs of %d bytes (%q)", r, sandbox.DefaultTmpSize, want)
	}
	r = s.Shell(t, `cat /tmp/keep-`+m+` 2>&1; echo "cat=$?"`)
	mustOK(t, r)
	if !strings.Contains(r.Stdout, "No such file or directory\ncat=1\n") {
		t.Errorf("/tmp kept a file from the last start: %v", r)
	}
	// Nothing on the host: the private directory of the launchers before
	// is neither made nor written.
	uid := fmt.Sprint(s.User.Uid)
	for _, p := range []string{filepath.Join(os.TempDir(), "keep-"+m), filepath.Join("/tmp/claude-private-"+uid, "keep-"+m)} {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the sandbox's /tmp file is on the host at %s: %v", p, err)
		}
	}

	t.Run("full", func(t *testing.T) {
		s.WriteConfig(t, "limit tmp 1M\n")
		r := s.Shell(t, `head -c 2M /dev/zero >/tmp/fill; echo "head=$?"; wc -c </tmp/fill`)
		mustOK(t, r)
		if want := "\nhead: error writing 'standard output': No space left on device\n"; !strings.HasSuffix(r.Stderr, want) {
			t.Errorf("filling /tmp under limit tmp 1M: stderr %q, want it to end with %q", r.Stderr, want)
		}
		if want := "head=1\n1048576\n"; r.Stdout != want {
			t.Errorf("filling /tmp under limit tmp 1M: stdout %q, want %q", r.Stdout, want)
		}
	})
}

// TestPrivateTmpDirectory: CLAUDE_SBX_TMP makes /tmp that directory of
// the host, which persists.
func TestPrivateTmpDirectory(t *testing.T) {
	s := testutil.NewSandbox(t)
	tmp := filepath.Join(testutil.PublicDir(t), "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	s.User.Chown(t, tmp)
	s.Env = []string{"CLAUDE_SBX_TMP=" + filepath.Join(tmp, "private")}
	m := marker(t)
	r := s.Shell(t, `echo `+m+` > /tmp/keep`)
	mustOK(t, r)
	r = s.Shell(t, `cat /tmp/keep`)
	mustOK(t, r)
	if strings.TrimSpace(r.Stdout) != m {
		t.Errorf("private /tmp did not persist: %v", r)
	}
	fi, err := os.Lstat(filepath.Join(tmp, "private"))
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("private tmp on the host: %v, %v; want a 0700 directory", fi, err)
	}
}

// TestPrivateTmpPerProject: CLAUDE_SBX_TMP gives each project a directory
// of its own below it: what project A's session leaves in /tmp is not in
// project B's, and is in A's next session. A symlink planted as a
// project's directory (to another project's) is refused.
func TestPrivateTmpPerProject(t *testing.T) {
	s := testutil.NewSandbox(t)
	tmp := filepath.Join(testutil.PublicDir(t), "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	s.User.Chown(t, tmp)
	root := filepath.Join(tmp, "private")
	s.Env = []string{"CLAUDE_SBX_TMP=" + root}
	a, b := filepath.Join(s.Home, "src", "a"), filepath.Join(s.Home, "src", "b")
	for _, d := range []string{filepath.Dir(a), a, b} {
		mkUserDir(t, s, d)
	}
	m := marker(t)
	in := func(dir, script string) testutil.Result {
		cmd := s.Command("--shell", "-c", script)
		cmd.Dir = dir
		return testutil.RunCommand(t, cmd)
	}
	if r := in(a, "echo "+m+" > /tmp/left"); r.Code != 0 {
		t.Fatalf("project a: %v", r)
	}
	if r := in(b, "cat /tmp/left 2>&1"); r.Code != 1 || strings.TrimSpace(r.Stdout) != "cat: /tmp/left: No such file or directory" {
		t.Errorf("project b's /tmp after project a's session: %v, want no /tmp/left", r)
	}
	if r := in(a, "cat /tmp/left"); r.Code != 0 || strings.TrimSpace(r.Stdout) != m {
		t.Errorf("project a's next session: %v, want its /tmp/left", r)
	}
	ents, _ := os.ReadDir(root)
	if len(ents) != 2 {
		t.Fatalf("%s holds %v, want a directory per project", root, ents)
	}
	// b's directory replaced by a link to a's, as a session of another
	// project could plant it.
	var da, db string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "a-") {
			da = e.Name()
		} else {
			db = e.Name()
		}
	}
	if err := os.RemoveAll(filepath.Join(root, db)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(da, filepath.Join(root, db)); err != nil {
		t.Fatal(err)
	}
	s.User.Chown(t, filepath.Join(root, db))
	want := "claude: private tmp " + filepath.Join(root, db) + " is a symlink (to \"" + da + "\"), not a directory: someone may have planted it: remove it or set CLAUDE_SBX_TMP to a directory of your own\n"
	if r := in(b, "cat /tmp/left"); r.Code != 1 || r.Stdout != "" || !strings.HasSuffix(r.Stderr, want) {
		t.Errorf("project b with its tmp a link to a's: want exit 1 and\n%s%v", want, r)
	}
}

func TestEnvironmentScrubbed(t *testing.T) {
	s := testutil.NewSandbox(t)
	s.Env = []string{
		"SSH_AUTH_SOCK=/run/bait/ssh", "DISPLAY=:42", "DBUS_SESSION_BUS_ADDRESS=unix:path=/run/bait/bus",
		"WAYLAND_DISPLAY=bait-0", "TMUX=/tmp/bait,1,0", "XDG_SESSION_ID=bait", "INVOCATION_ID=bait",
		"ANTHROPIC_API_KEY=sk-kept", "MY_OWN_VAR=kept",
	}
	r := s.Shell(t, `env`)
	mustOK(t, r)
	if strings.Contains(r.Stdout, "bait") || strings.Contains(r.Stdout, "DISPLAY=") {
		t.Errorf("session variables reach the sandbox:\n%s", r.Stdout)
	}
	for _, want := range []string{"ANTHROPIC_API_KEY=sk-kept", "MY_OWN_VAR=kept", "XDG_DATA_DIRS=/usr/share", "DISABLE_UPDATES=1",
		"DISABLE_AUTOUPDATER=1", "DISABLE_INSTALLATION_CHECKS=1", fmt.Sprintf("XDG_RUNTIME_DIR=/run/user/%d", s.User.Uid)} {
		if !strings.Contains(r.Stdout, want+"\n") {
			t.Errorf("environment lacks %s:\n%s", want, r.Stdout)
		}
	}
}

func TestRuntimeDirEmpty(t *testing.T) {
	s := testutil.NewSandbox(t)
	// Unset on the host (testutil sets none): it exists inside, empty,
	// owned by the user, writable.
	r := s.Shell(t, `cd "$XDG_RUNTIME_DIR" && ls -A && stat -c '%a %u' . && touch x && echo ok`)
	mustOK(t, r)
	want := fmt.Sprintf("700 %d\nok\n", s.User.Uid)
	if r.Stdout != want {
		t.Errorf("XDG_RUNTIME_DIR inside: %q, want %q (%v)", r.Stdout, want, r)
	}
}

func TestNestedUsernsFails(t *testing.T) {
	s := testutil.NewSandbox(t)
	r := s.Shell(t, `unshare -U true`)
	if r.Code == 0 || !strings.Contains(r.Stderr, "unshare failed: Operation not permitted") {
		t.Errorf("unshare -U inside: want EPERM from the seccomp filter: %v", r)
	}
	// With the filter's rule lifted, bwrap --disable-userns still stops it
	// (max_user_namespaces is 0 inside: ENOSPC).
	s.WriteConfig(t, "seccomp-allow unshare\n")
	r = s.Shell(t, `unshare -U true`)
	if r.Code == 0 || !strings.Contains(r.Stderr, "unshare failed: No space left on device") {
		t.Errorf("unshare -U with seccomp-allow unshare: want ENOSPC from --disable-userns: %v", r)
	}
}

func TestWorkingDirectoryRule(t *testing.T) {
	s := testutil.NewSandbox(t)
	proj := filepath.Join(s.Home, "projects", "p")
	mkUserDir(t, s, filepath.Join(s.Home, "projects"))
	mkUserDir(t, s, proj)
	mkUserDir(t, s, filepath.Join(proj, "sub"))
	mkUserDir(t, s, filepath.Join(s.Home, "projects", "sibling"))
	mkUserDir(t, s, filepath.Join(s.Home, "other"))
	writeUserFile(t, s, filepath.Join(proj, "in-project"), "p", 0o644)
	writeUserFile(t, s, filepath.Join(s.Home, "other", "in-other"), "o", 0o644)
	script := `pwd; ls -A ` + filepath.Join(s.Home, "projects") + `; cat ./in-project ./in-other; echo end`
	run := func(dir string) testutil.Result {
		cmd := s.Command("--shell", "-c", script)
		cmd.Dir = dir
		return testutil.RunCommand(t, cmd)
	}
	const notVisible = "is not visible in the sandbox"

	// No config: the working directory is the project, read-write; no
	// sibling.
	r := run(proj)
	if want := proj + "\np\np"; !strings.HasPrefix(r.Stdout, want) || strings.Contains(r.Stdout, "sibling") || strings.Contains(r.Stderr, notVisible) {
		t.Errorf("without config: stdout %q, want prefix %q and no sibling (%v)", r.Stdout, want, r)
	}
	// Below a git checkout the project is the checkout's root.
	mkUserDir(t, s, filepath.Join(proj, ".git"))
	cmd := s.Command("--shell", "-c", `pwd; cat ../in-project; touch ../written && echo written`)
	cmd.Dir = filepath.Join(proj, "sub")
	r = testutil.RunCommand(t, cmd)
	if want := filepath.Join(proj, "sub") + "\npwritten\n"; r.Stdout != want {
		t.Errorf("in a subdirectory of a git checkout: stdout %q, want %q (%v)", r.Stdout, want, r)
	}
	if _, err := os.Stat(filepath.Join(proj, "written")); err != nil {
		t.Errorf("write in the project did not reach the host: %v", err)
	}
	// Home and outside the home: not visible, and one line says so.
	for _, dir := range []string{s.Home, filepath.Dir(s.BinDir)} {
		r = run(dir)
		if !strings.HasPrefix(r.Stdout, s.Home+"\n") || strings.Count(r.Stderr, notVisible) != 1 {
			t.Errorf("in %s: want a start in ~ and one line saying it is not visible: %v", dir, r)
		}
	}

	// The shipped example of earlier versions still works: inside
	// ~/projects, the project only.
	s.WriteConfig(t, "project off\nif pwd-under ~/projects\n  tmpfs ~/projects\n  rw $PWD\n  chdir $PWD\nend\n")
	r = run(proj)
	if want := proj + "\np\np"; !strings.HasPrefix(r.Stdout, want) {
		t.Errorf("inside ~/projects: stdout %q, want prefix %q (%v)", r.Stdout, want, r)
	}
	if strings.Contains(r.Stdout, "sibling") {
		t.Errorf("sibling project visible: %v", r)
	}
	// Outside ~/projects the rule does not apply, and project off hides
	// it.
	r = run(filepath.Join(s.Home, "other"))
	if !strings.HasPrefix(r.Stdout, s.Home+"\n") || strings.Contains(r.Stdout, "\no\n") {
		t.Errorf("outside ~/projects, the working directory is visible: %v", r)
	}
	// A symlink into ~/projects that points elsewhere is judged by where
	// it points.
	link := filepath.Join(proj, "escape")
	if err := os.Symlink(filepath.Join(s.Home, "other"), link); err != nil {
		t.Fatal(err)
	}
	s.User.Chown(t, link)
	cmd = s.Command("--shell", "-c", script)
	cmd.Dir = link
	cmd.Env = append(cmd.Env, "PWD="+link)
	r = testutil.RunCommand(t, cmd)
	if strings.Contains(r.Stdout, "\no\n") {
		t.Errorf("symlink out of ~/projects exposed its target: %v", r)
	}
}

func TestInheritedFDsClosed(t *testing.T) {
	s := testutil.NewSandbox(t)
	cmd := s.Command("--shell", "-c", `exec ls /proc/self/fd`)
	// fds 3..7 in the launcher, without O_CLOEXEC.
	for i := 0; i < 5; i++ {
		f, err := os.Open("/dev/null")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.ExtraFiles = append(cmd.ExtraFiles, f)
	}
	r := testutil.RunCommand(t, cmd)
	mustOK(t, r)
	// ls opens one directory fd of its own (3).
	if got := strings.Fields(r.Stdout); !slices.Equal(got, []string{"0", "1", "2", "3"}) {
		t.Errorf("fds inside = %v, want [0 1 2 3] (3 is ls's own)", got)
	}
}

func TestArgsReachAgentVerbatim(t *testing.T) {
	s := testutil.NewSandbox(t)
	args := []string{"", "two words", "it's", `"dq"`, "new\nline", "$HOME", "*", "--sandbox-dry-run", "--shell", "-p", "tab\there", "ünï"}
	r := s.Run(t, args...)
	mustOK(t, r)
	if got := testutil.AgentArgs(r.Stdout); !slices.Equal(got, args) {
		t.Errorf("agent got %q, want %q", got, args)
	}
}

func TestExitStatus(t *testing.T) {
	s := testutil.NewSandbox(t)
	tests := []struct {
		script string
		want   int
	}{
		{"exit 0", 0},
		{"exit 7", 7},
		{"kill -TERM $$", 128 + 15},
		{"kill -KILL $$", 128 + 9},
	}
	for _, tt := range tests {
		if r := s.Shell(t, tt.script); r.Code != tt.want {
			t.Errorf("%q: exit %d, want %d (%v)", tt.script, r.Code, tt.want, r)
		}
	}
}

func TestAgentMissing(t *testing.T) {
	s := testutil.NewSandbox(t)
	if err := os.Remove(filepath.Join(s.BinDir, "claude")); err != nil {
		t.Fatal(err)
	}
	r := s.Run(t, "--version")
	want := "claude: " + filepath.Join(s.BinDir, "claude") + " not found: run claude-update\n"
	if r.Code != 1 || r.Stderr != want {
		t.Errorf("missing agent: %v; want exit 1 and %q", r, want)
	}
}

// findProcs returns the pids whose command line contains m.
func findProcs(m string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if bytes.Contains(b, []byte(m)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting (60s) for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestKillLauncherKillsSandbox(t *testing.T) {
	s := testutil.NewSandbox(t)
	m := marker(t)
	// A sandbox process that would outlive everything: a background
	// child that ignores SIGHUP and SIGTERM, and the shell waiting on it.
	// The marker reaches the sandbox through the environment, so that only
	// the sleep's command line carries it, not the launcher's or the shell's.
	s.Env = []string{"SBX_MARK=" + m}
	cmd := s.Command("--shell", "-c", `trap '' HUP TERM; (exec -a "sbx-$SBX_MARK" sleep 600) & wait`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the sandbox process to start", func() bool { return len(findProcs("sbx-"+m)) > 0 })
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	waitFor(t, "the sandbox to die after SIGKILL of the launcher", func() bool { return len(findProcs("sbx-"+m)) == 0 })
}

// TestSignalsForwarded sends signals to the launcher as kill(1) would: each
// must reach the chain (bwrap dies of it and takes the sandbox along), and
// the launcher must exit normally with 128+signal, not die of it itself.
func TestSignalsForwarded(t *testing.T) {
	s := testutil.NewSandbox(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT, syscall.SIGUSR1} {
		t.Run(sig.String(), func(t *testing.T) {
			m := marker(t)
			s.Env = []string{"SBX_MARK=" + m}
			cmd := s.Command("--shell", "-c", `exec -a "sbx-$SBX_MARK" sleep 600`)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the sandbox process to start", func() bool { return len(findProcs("sbx-"+m)) > 0 })
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			// Without forwarding, a Go launcher would ignore SIGUSR1 and
			// wait for the sleep: give up on it after a while.
			waited := make(chan error, 1)
			go func() { waited <- cmd.Wait() }()
			select {
			case <-waited:
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				<-waited
				t.Fatalf("launcher still running 30s after %v", sig)
			}
			ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if ws.Signaled() || ws.ExitStatus() != 128+int(sig) {
				t.Errorf("launcher after %v: %v; want exit status %d", sig, cmd.ProcessState, 128+int(sig))
			}
			waitFor(t, "the sandbox to end", func() bool { return len(findProcs("sbx-"+m)) == 0 })
		})
	}
}

func TestHostilePrivateTmp(t *testing.T) {
	s := testutil.NewSandbox(t)
	// A shared, sticky directory like /tmp, where other users can create
	// names first.
	shared := filepath.Join(testutil.PublicDir(t), "shared")
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(shared, "claude-private")
	tests := []struct {
		name  string
		plant func()
		want  string
	}{
		{"dir of another user", func() { os.Mkdir(target, 0o700) }, "is owned by uid 0, not by you"},
		{"symlink", func() {
			os.Symlink(s.Home, target)
			os.Lchown(target, 0, 0)
		}, "is a symlink"},
		{"symlink of the user's own", func() {
			os.Symlink(s.Home, target)
			s.User.Chown(t, target)
		}, "is a symlink"},
		{"file", func() { os.WriteFile(target, nil, 0o600); s.User.Chown(t, target) }, "is not a directory"},
		{"open mode", func() { os.Mkdir(target, 0o755); os.Chmod(target, 0o755); s.User.Chown(t, target) }, "has mode 0755, want 0700"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			os.RemoveAll(target)
			tt.plant()
			defer os.RemoveAll(target)
			s.Env = []string{"CLAUDE_SBX_TMP=" + target}
			r := s.Shell(t, `echo started`)
			if r.Code != 1 || !strings.Contains(r.Stderr, "private tmp "+target+" "+tt.want) || strings.Count(r.Stderr, "\n") != 1 {
				t.Errorf("want exit 1 and one line with %q: %v", tt.want, r)
			}
			if strings.Contains(r.Stdout, "started") {
				t.Errorf("sandbox started on a hostile tmp: %v", r)
			}
		})
	}
	// A non-sticky directory others can write is refused too.
	open := filepath.Join(testutil.PublicDir(t), "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777)
	s.Env = []string{"CLAUDE_SBX_TMP=" + filepath.Join(open, "p")}
	if r := s.Shell(t, `echo started`); r.Code != 1 || !strings.Contains(r.Stderr, "writable by others and not sticky") {
		t.Errorf("non-sticky shared parent: %v", r)
	}
}

func TestBadConfig(t *testing.T) {
	s := testutil.NewSandbox(t)
	tests := []struct {
		name, config, want string
	}{
		{"unknown directive", "# ok\nmount /a /b\n", "~/.claude-sandbox-init:2: unknown directive \"mount\""},
		{"missing argument", "ro\n", "~/.claude-sandbox-init:1: ro: missing argument: want ro SRC [DEST]"},
		{"relative path", "rw projects\n", `~/.claude-sandbox-init:1: rw: "projects" is not an absolute path (start it with /, ~/ or $HOME)`},
		{"unterminated quote", "setenv A 'x\n", "~/.claude-sandbox-init:1: unterminated ' quote"},
		{"nul", "ro /usr\x00/x\n", "~/.claude-sandbox-init:1: line contains a NUL byte"},
		{"unknown syscall", "seccomp-allow frobnicate\n", `~/.claude-sandbox-init:1: seccomp-allow: unknown syscall "frobnicate"`},
		{"missing source", "\n\nro /nonexistent-" + marker(t) + "\n", "~/.claude-sandbox-init:3: ro: /nonexistent-"},
		{"if without end", "if exists /usr\n", "~/.claude-sandbox-init:1: if without end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.WriteConfig(t, tt.config)
			r := s.Shell(t, `echo started`)
			if r.Code != 2 || !strings.HasPrefix(r.Stderr, "claude: "+tt.want) || strings.Count(r.Stderr, "\n") != 1 || r.Stdout != "" {
				t.Errorf("want exit 2 and the line %q: %v", "claude: "+tt.want, r)
			}
		})
	}
	t.Run("path with newline", func(t *testing.T) {
		dir := filepath.Join(s.Home, "a\nb")
		mkUserDir(t, s, dir)
		s.WriteConfig(t, "rw $PWD\n")
		cmd := s.Command("--shell", "-c", "echo started")
		cmd.Dir = dir
		r := testutil.RunCommand(t, cmd)
		want := fmt.Sprintf("claude: ~/.claude-sandbox-init:1: rw: path %q contains a newline\n", dir)
		if r.Code != 2 || r.Stderr != want {
			t.Errorf("want exit 2 and %q: %v", want, r)
		}
	})
	t.Run("group-writable file", func(t *testing.T) {
		s.WriteConfig(t, "ro /usr\n")
		os.Chmod(filepath.Join(s.Home, ".claude-sandbox-init"), 0o664)
		r := s.Shell(t, `echo started`)
		if r.Code != 2 || !strings.Contains(r.Stderr, "writable by group or others (mode 0664)") || r.Stdout != "" {
			t.Errorf("group-writable config accepted: %v", r)
		}
	})
	t.Run("owned by another user", func(t *testing.T) {
		s.WriteConfig(t, "ro /usr\n")
		os.Lchown(filepath.Join(s.Home, ".claude-sandbox-init"), 4242, 4242)
		r := s.Shell(t, `echo started`)
		if r.Code != 2 || !strings.Contains(r.Stderr, "owned by uid 4242, not by you") || r.Stdout != "" {
			t.Errorf("foreign config accepted: %v", r)
		}
	})
}

func TestKnobErrors(t *testing.T) {
	s := testutil.NewSandbox(t)
	s.Env = []string{"CLAUDE_SBX_NETNS=../../proc/1/ns/net"}
	r := s.Shell(t, `echo started`)
	if r.Code != 2 || !strings.HasPrefix(r.Stderr, "claude: CLAUDE_SBX_NETNS: invalid namespace name") || r.Stdout != "" {
		t.Errorf("bad CLAUDE_SBX_NETNS: %v", r)
	}
}

func TestDryRunStartsNothing(t *testing.T) {
	s := testutil.NewSandbox(t)
	r := s.Run(t, "--sandbox-dry-run", "--shell", "-c", "echo started")
	mustOK(t, r)
	for _, want := range []string{"\n/usr/bin/bwrap \\\n", "  --unshare-user \\\n", "  --disable-userns \\\n", "  --seccomp \\\n  4 \\\n",
		"  -c \\\n  'echo started'\n", "# not using network namespacing: namespace " + testutil.NoNetns + " is not active\n"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("dry run lacks %q:\n%s", want, r.Stdout)
		}
	}
	if strings.Contains(r.Stdout, "started\n") && !strings.Contains(r.Stdout, "'echo started'") {
		t.Errorf("dry run ran the command: %v", r)
	}
	for _, p := range []string{filepath.Join(s.Home, ".claude-home"), filepath.Join(s.Home, ".claude-homes")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("dry run created %s", p)
		}
	}
}

func TestSeccompFlags(t *testing.T) {
	s := testutil.NewSandbox(t)
	r := s.Run(t, "--sandbox-seccomp")
	mustOK(t, r)
	if !strings.Contains(r.Stdout, "keyctl") {
		t.Errorf("--sandbox-seccomp table lacks keyctl:\n%s", r.Stdout)
	}
	r = s.Run(t, "--sandbox-seccomp=bpf")
	mustOK(t, r)
	if len(r.Stdout) == 0 || len(r.Stdout)%8 != 0 {
		t.Errorf("--sandbox-seccomp=bpf wrote %d bytes, want a non-empty multiple of 8", len(r.Stdout))
	}
	// The config changes the program.
	s.WriteConfig(t, "seccomp-allow perf_event_open\n")
	r2 := s.Run(t, "--sandbox-seccomp=bpf")
	mustOK(t, r2)
	if r2.Stdout == r.Stdout {
		t.Errorf("seccomp-allow perf_event_open did not change the program")
	}
}

func TestTerminalRestored(t *testing.T) {
	s := testutil.NewSandbox(t)
	master, pts := testutil.OpenPty(t)
	defer master.Close()
	defer pts.Close()
	before, err := unix.IoctlGetTermios(int(pts.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if before.Lflag&unix.ICANON == 0 {
		t.Fatal("pty starts in raw mode; the test could not tell")
	}
	go func() { // drain the output
		buf := make([]byte, 4096)
		for {
			if _, err := master.Read(buf); err != nil {
				return
			}
		}
	}()
	cmd := s.Command("--shell", "-c", `stty raw -echo && stty -a | grep -q -- -icanon && echo raw-inside`)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, pts, pts
	r := testutil.RunCommand(t, cmd)
	if r.Code != 0 {
		t.Fatalf("stty inside failed: %v", r)
	}
	after, err := unix.IoctlGetTermios(int(pts.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if *after != *before {
		t.Errorf("terminal modes not restored: before %+v, after %+v", before, after)
	}
}

// TestPlantedSymlinkRefused performs the attack: in one session the agent
// leaves a symlink in ~/.claude-home pointing at a directory of the real
// home; a config line that mounts below it would make bwrap, which follows
// it on the host at the next start, create files there. The launcher must
// refuse with exit 2 and create nothing.
func TestPlantedSymlinkRefused(t *testing.T) {
	s := testutil.NewSandbox(t)
	target := filepath.Join(s.Home, "real-cache")
	mkUserDir(t, s, target)
	// Inside, the host's / is /oldroot while bwrap sets up the mounts.
	mustOK(t, s.Shell(t, "ln -s /oldroot"+target+" ~/.config"))
	s.WriteConfig(t, "ro /etc/hosts ~/.config/git/config\n")
	r := s.Shell(t, "echo started")
	sh := projectHome(t, s, s.Home)
	want := "claude: ~/.claude-sandbox-init:1: ro: " + filepath.Join(sh, ".config") +
		" is a symlink in " + sh +
		", which the sandbox can write: remove it (the agent may have made it) or name the real path\n"
	if r.Code != 2 || r.Stderr != want || strings.Contains(r.Stdout, "started") {
		t.Errorf("planted symlink: %v\nwant exit 2 and stderr %q", r, want)
	}
	if ents, err := os.ReadDir(target); err != nil || len(ents) != 0 {
		t.Errorf("files created through the planted link in %s: %v, %v", target, ents, err)
	}
}

// TestSandboxHomeModeChecked: the agent can chmod ~ (its sandbox home);
// the launcher puts the mode back at exit, and where that did not happen
// (a launcher killed with SIGKILL) the next start refuses a sandbox home
// that others could write into.
func TestSandboxHomeModeChecked(t *testing.T) {
	s := testutil.NewSandbox(t)
	mustOK(t, s.Shell(t, "chmod 0777 ~"))
	sh := projectHome(t, s, s.Home)
	if fi, err := os.Stat(sh); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("sandbox home after exit: %v, %v; want mode 0700 put back", fi, err)
	}
	if err := os.Chmod(sh, 0o777); err != nil {
		t.Fatal(err)
	}
	r := s.Shell(t, "echo started")
	want := "claude: sandbox home " + sh + " has mode 0777, want 0700: chmod 700 " + sh + "\n"
	if r.Code != 1 || r.Stderr != want || strings.Contains(r.Stdout, "started") {
		t.Errorf("world-writable sandbox home: %v\nwant exit 1 and stderr %q", r, want)
	}
}
