//go:build linux

package claude_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil/fakeapi"
)

// The real agent's tool loop in the sandbox: the agent (CLAUDE_SBX_E2E_AGENT,
// set by `make e2e-agent-loop`) runs `claude -p` as the test user through the
// launcher against a fake Messages API on loopback (the sandbox shares the
// host's network when the network namespace is not active). The API's
// scripted tool calls run inside the sandbox, and the tests assert on the
// tool results the agent sends back and on the host.

// agentEnv is what the agent needs to talk to the fake API and nothing
// else: the base URL and a dummy key (through the launcher's environment
// pass-through), and no traffic beyond the API (without
// CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC the agent resolves
// api.anthropic.com and calls HEAD /api/hello on the base URL at start).
func agentEnv(api *fakeapi.Server) []string {
	return []string{
		"ANTHROPIC_BASE_URL=" + api.URL(),
		"ANTHROPIC_API_KEY=" + dummyKey,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
	}
}

const dummyKey = "sk-ant-dummy-agentloop"

// loopSandbox is a Sandbox whose BinDir/claude is the real agent.
func loopSandbox(t *testing.T) *testutil.Sandbox {
	t.Helper()
	agent := testutil.E2EAgentPath(t)
	s := testutil.NewSandbox(t)
	testutil.RequireCommand(t, "git")
	dst := filepath.Join(s.BinDir, "claude")
	if err := os.Remove(dst); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(agent, dst); err != nil {
		testutil.CopyFile(t, agent, dst, 0o755)
	}
	return s
}

// userProject makes ~/NAME a git repository of the test user with one
// commit holding greeting.txt ("hello\n").
func userProject(t *testing.T, s *testutil.Sandbox, name string) string {
	t.Helper()
	dir := filepath.Join(s.Home, name)
	mkUserDir(t, s, dir)
	writeUserFile(t, s, filepath.Join(dir, "greeting.txt"), "hello\n", 0o644)
	git := func(args ...string) {
		t.Helper()
		cmd := s.User.Command(s.Home, "git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t.test", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	git("init", "-q")
	git("add", "greeting.txt")
	git("commit", "-qm", "first")
	return dir
}

// runAgent runs `claude -p PROMPT ARGS...` through the launcher in dir.
func runAgent(t *testing.T, s *testutil.Sandbox, api *fakeapi.Server, dir string, args ...string) testutil.Result {
	t.Helper()
	s.Env = append(s.Env, agentEnv(api)...)
	cmd := s.Command(append([]string{"-p", "look around", "--allowedTools", "Bash,Read,Write,Edit"}, args...)...)
	cmd.Dir = dir
	return testutil.RunCommand(t, cmd)
}

// results returns the tool results by id, failing unless the API saw the
// whole script with the dummy key and nothing went wrong.
func results(t *testing.T, api *fakeapi.Server, turns int) map[string]fakeapi.ToolResult {
	t.Helper()
	for _, err := range api.Errors() {
		t.Errorf("fake API: %v", err)
	}
	if got := api.Served(); got != turns {
		t.Fatalf("the agent asked for %d turns of the script, want %d (did ANTHROPIC_BASE_URL reach it?)", got, turns)
	}
	for _, r := range api.Requests() {
		if r.Loop && r.Header.Get("X-Api-Key") != dummyKey {
			t.Errorf("request %s %s: X-Api-Key %q, want the dummy key %q", r.Method, r.Path, r.Header.Get("X-Api-Key"), dummyKey)
		}
	}
	rs, err := api.ToolResults()
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestE2EAgentLoop(t *testing.T) {
	s := loopSandbox(t)
	m := marker(t)
	proj := userProject(t, s, "proj")

	// Bait in the user's real home, and a file in the host's /tmp.
	mkUserDir(t, s, filepath.Join(s.Home, ".ssh"))
	if err := os.Chmod(filepath.Join(s.Home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	bait := filepath.Join(s.Home, ".ssh", "id_ed25519")
	writeUserFile(t, s, bait, "BAIT-PRIVATE-KEY-"+m+"\n", 0o600)
	hostTmp := filepath.Join(os.TempDir(), "agentloop-host-"+m)
	if err := os.WriteFile(hostTmp, []byte("host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(hostTmp) })

	newFile := filepath.Join(proj, "new.txt")
	greeting := filepath.Join(proj, "greeting.txt")
	api := fakeapi.Start(t, fakeapi.New(
		fakeapi.Turn{
			fakeapi.Text("Looking around."),
			fakeapi.Bash("pwd", "pwd"),
			fakeapi.Bash("ids", "id -u; id -g; cat /proc/self/uid_map"),
			fakeapi.Bash("ps", "ps -eo uid=,pid=,comm="),
			fakeapi.Bash("tmp", "ls /tmp/agentloop-host-"+m+" 2>&1; echo inside > /tmp/agentloop-"+m+"; echo rc=$?"),
			fakeapi.Bash("catbait", "cat "+bait+" 2>&1; echo rc=$?"),
			fakeapi.Read("readbait", bait),
			fakeapi.Read("read", greeting),
			fakeapi.Write("write", newFile, "written inside\n"),
		},
		fakeapi.Turn{
			fakeapi.Edit("edit", greeting, "hello", "hello edited"),
		},
		fakeapi.Turn{
			fakeapi.Bash("status", "git status --porcelain"),
			fakeapi.Bash("commit", "git -c user.name=a -c user.email=a@a.test commit -qam inside 2>&1; echo rc=$?"),
		},
		fakeapi.Turn{fakeapi.Text("All done " + m)},
	))
	r := runAgent(t, s, api, proj)
	if r.Code != 0 || !strings.Contains(r.Stdout, "All done "+m) {
		t.Errorf("claude -p through the launcher: %v", r)
	}
	rs := results(t, api, 4)
	for id, res := range rs {
		t.Logf("tool result %s (error %v): %q", id, res.IsError, res.Content)
	}
	result := func(id string) string {
		t.Helper()
		res, ok := rs[id]
		if !ok {
			t.Fatalf("no tool_result for %s; have %v", id, rs)
		}
		return res.Content
	}
	check := func(id, want string) {
		t.Helper()
		if got := result(id); got != want {
			t.Errorf("tool result %s = %q, want %q", id, got, want)
		}
	}

	t.Run("project", func(t *testing.T) {
		check("pwd", proj)
		if got := result("write"); !strings.HasPrefix(got, "File created successfully at: "+newFile) {
			t.Errorf("Write result = %q", got)
		}
		if b, err := os.ReadFile(newFile); err != nil || string(b) != "written inside\n" {
			t.Errorf("the Write on the host: %q, %v", b, err)
		}
		if fi, err := os.Stat(newFile); err == nil && fi.Sys().(*syscall.Stat_t).Uid != s.User.Uid {
			t.Errorf("%s is owned by uid %d, want the user's %d", newFile, fi.Sys().(*syscall.Stat_t).Uid, s.User.Uid)
		}
		if got := result("read"); !strings.Contains(got, "hello") {
			t.Errorf("Read of the project's file = %q", got)
		}
		if got := result("edit"); !strings.Contains(got, "has been updated") {
			t.Errorf("Edit result = %q", got)
		}
		if b, err := os.ReadFile(greeting); err != nil || string(b) != "hello edited\n" {
			t.Errorf("the Edit on the host: %q, %v", b, err)
		}
	})
	t.Run("home", func(t *testing.T) {
		check("catbait", "cat: "+bait+": No such file or directory\nrc=1")
		res := rs["readbait"]
		if !res.IsError || strings.Contains(res.Content, m) {
			t.Errorf("Read of the bait: %+v, want an error without the key", res)
		}
	})
	t.Run("sandbox", func(t *testing.T) {
		uid := fmt.Sprint(s.User.Uid)
		ids := strings.Split(result("ids"), "\n")
		// One uid mapped, the user's own (the outside id is bwrap's
		// intermediate namespace; on the host the map is 0 0 4294967295).
		if len(ids) != 3 || ids[0] != uid || ids[1] != fmt.Sprint(s.User.Gid) || len(strings.Fields(ids[2])) != 3 || strings.Fields(ids[2])[0] != uid || strings.Fields(ids[2])[2] != "1" {
			t.Errorf("id -u; id -g; uid_map = %q, want the user's ids and a map of the one uid %s", ids, uid)
		}
		// Host processes (this test runs as root) are not in the
		// sandbox's PID namespace; they would show as 65534.
		ps := strings.Split(result("ps"), "\n")
		if len(ps) < 2 {
			t.Errorf("ps -e = %q", ps)
		}
		for _, line := range ps {
			f := strings.Fields(line)
			if len(f) != 3 || f[0] != uid {
				t.Errorf("ps -e shows %q, not a process of uid %s", line, uid)
			}
		}
		check("tmp", "ls: cannot access '/tmp/agentloop-host-"+m+"': No such file or directory\nrc=0")
		// The sandbox's /tmp is its own tmpfs: the file is on no
		// directory of the host's.
		for _, p := range []string{filepath.Join(os.TempDir(), "agentloop-"+m), filepath.Join("/tmp/claude-private-"+uid, "agentloop-"+m)} {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("the sandbox's /tmp file is on the host at %s", p)
			}
		}
		check("status", " M greeting.txt\n?? new.txt")
		if got := result("commit"); !regexp.MustCompile(`(?s)index\.lock'?: Read-only file system.*\nrc=128$`).MatchString(got) {
			t.Errorf("git commit inside = %q, want a read-only .git and exit 128", got)
		}
		out, err := s.User.Command(s.Home, "git", "-C", proj, "log", "--format=%s").Output()
		if err != nil || string(out) != "first\n" {
			t.Errorf("git log on the host = %q, %v; want only the first commit", out, err)
		}
	})
}

// TestE2EAgentLoopExit: the launcher's exit status is the agent's, and
// nothing the session started outlives it. A tool call leaves a process in
// a session of its own behind; the agent stops with an error after its
// turn limit. The same run without the sandbox is the control: the same
// exit status, and the process survives.
func TestE2EAgentLoopExit(t *testing.T) {
	s := loopSandbox(t)
	m := marker(t)
	proj := userProject(t, s, "proj")
	s.Env = []string{"SBX_MARK=" + m}
	// The marker reaches the sleep through the environment, so only its
	// command line carries it.
	leave := `setsid bash -c 'exec -a "sbx-$SBX_MARK" sleep 600' </dev/null >/dev/null 2>&1 &
for i in $(seq 100); do pgrep -f "^sbx-$SBX_MARK" >/dev/null && break; sleep 0.1; done
pgrep -c -f "^sbx-$SBX_MARK"`
	script := func() *fakeapi.Server {
		return fakeapi.New(
			fakeapi.Turn{fakeapi.Bash("leave", leave)},
			fakeapi.Turn{fakeapi.Bash("again", "true")},
		)
	}
	args := []string{"--max-turns", "2"}

	// The control: the agent run bare, as the user, with a home of its own.
	bare := fakeapi.Start(t, script())
	bareHome := testutil.UserHome(t, s.User)
	cmd := s.User.Command(bareHome, filepath.Join(s.BinDir, "claude"), append([]string{"-p", "look around", "--allowedTools", "Bash,Read,Write,Edit"}, args...)...)
	cmd.Dir = proj
	cmd.Env = append(cmd.Env, agentEnv(bare)...)
	cmd.Env = append(cmd.Env, "SBX_MARK="+m)
	br := testutil.RunCommand(t, cmd)
	t.Logf("bare agent: %v", br)
	if res := results(t, bare, 2)["leave"]; res.Content != "1" {
		t.Fatalf("bare: the tool did not start the process: %+v", res)
	}
	if br.Code == 0 {
		t.Fatalf("bare agent: exit 0 after its turn limit, want an error: %v", br)
	}
	left := findProcs("sbx-" + m)
	if len(left) == 0 {
		t.Fatalf("bare agent: the process did not outlive it, so this test shows nothing")
	}
	for _, pid := range left {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	waitFor(t, "the control's process to die", func() bool { return len(findProcs("sbx-"+m)) == 0 })

	api := fakeapi.Start(t, script())
	r := runAgent(t, s, api, proj, args...)
	if res := results(t, api, 2)["leave"]; res.Content != "1" {
		t.Fatalf("sandboxed: the tool did not start the process: %+v", res)
	}
	if r.Code != br.Code || r.Stdout != br.Stdout {
		t.Errorf("sandboxed: exit %d, stdout %q; bare: exit %d, stdout %q", r.Code, r.Stdout, br.Code, br.Stdout)
	}
	if left := findProcs("sbx-" + m); len(left) != 0 {
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Errorf("processes of the session outlived the launcher: %v", left)
	}
	if left := findProcs(s.BinDir); len(left) != 0 {
		t.Errorf("the agent outlived the launcher: %v", left)
	}
}
