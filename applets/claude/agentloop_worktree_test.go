//go:build linux

package claude_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil/fakeapi"
)

// TestE2EAgentLoopWorktrees: two `claude -w NAME -p` sessions of the real
// agent in one repository at once. The launcher makes each worktree with
// the user's git before its sandbox starts; each session runs in its own
// worktree, writes there, and sees neither the main checkout nor the
// other worktree; host git lists both worktrees on their branches.
func TestE2EAgentLoopWorktrees(t *testing.T) {
	s := loopSandbox(t)
	proj := userProject(t, s, "proj")
	wt := func(name string) string { return filepath.Join(proj, ".claude", "worktrees", name) }
	session := func(name, other string) (*fakeapi.Server, func() testutil.Result) {
		// The first session waits in its tool call until the test has
		// seen the second one through: they run at once.
		wait := ""
		if name == "a" {
			wait = "; touch started; for i in $(seq 600); do [ -e go ] && break; sleep 0.1; done; ls go"
		}
		api := fakeapi.Start(t, fakeapi.New(
			fakeapi.Turn{
				fakeapi.Bash("look", "pwd; cat greeting.txt; git branch --show-current; ls -A ..; ls -A "+proj+"; echo mine > mine-"+name+
					"; touch "+wt(other)+"/from-"+name+" 2>&1; git log --format=%s"+wait),
			},
			fakeapi.Turn{fakeapi.Text("done " + name)},
		))
		cmd := s.Command("-p", "look around", "--allowedTools", "Bash", "-w", name)
		cmd.Dir = proj
		cmd.Env = append(cmd.Env, agentEnv(api)...)
		return api, func() testutil.Result { return testutil.RunCommand(t, cmd) }
	}
	apiA, runA := session("a", "b")
	apiB, runB := session("b", "a")
	resA := make(chan testutil.Result, 1)
	go func() { resA <- runA() }()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if _, err := os.Stat(filepath.Join(wt("a"), "started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("session a did not start its tool call")
		}
		select {
		case r := <-resA:
			t.Fatalf("session a ended before its tool call: %v", r)
		case <-time.After(100 * time.Millisecond):
		}
	}
	rb := runB()
	writeUserFile(t, s, filepath.Join(wt("a"), "go"), "", 0o644)
	ra := <-resA

	for _, c := range []struct {
		name string
		r    testutil.Result
		api  *fakeapi.Server
		tail string
	}{{"a", ra, apiA, "\ngo"}, {"b", rb, apiB, ""}} {
		other := map[string]string{"a": "b", "b": "a"}[c.name]
		if c.r.Code != 0 || !strings.Contains(c.r.Stdout, "done "+c.name) {
			t.Errorf("session %s: %v", c.name, c.r)
		}
		if !strings.Contains(c.r.Stderr, "claude: -w: made the worktree "+wt(c.name)+" on the new branch worktree-"+c.name+"\n") {
			t.Errorf("session %s: no line of the worktree made: %v", c.name, c.r)
		}
		res := results(t, c.api, 2)["look"]
		// pwd, the file of the commit, the branch; in .. only its own
		// worktree, in the main checkout only the mount points.
		want := wt(c.name) + "\nhello\nworktree-" + c.name + "\n" + c.name + "\n.claude\n.git\n" +
			"touch: cannot touch '" + wt(other) + "/from-" + c.name + "': No such file or directory\nfirst" + c.tail
		if res.Content != want {
			t.Errorf("session %s's tool result:\n%q\nwant\n%q", c.name, res.Content, want)
		}
		if b, err := os.ReadFile(filepath.Join(wt(c.name), "mine-"+c.name)); err != nil || string(b) != "mine\n" {
			t.Errorf("session %s's file in its worktree: %q, %v", c.name, b, err)
		}
		if _, err := os.Lstat(filepath.Join(wt(other), "from-"+c.name)); err == nil {
			t.Errorf("session %s wrote in the other's worktree", c.name)
		}
	}
	list := hostGit(t, s, proj, "worktree", "list", "--porcelain")
	for _, n := range []string{"a", "b"} {
		if !strings.Contains(list, "worktree "+wt(n)+"\n") || !strings.Contains(list, "branch refs/heads/worktree-"+n+"\n") {
			t.Errorf("host git worktree list lacks %s:\n%s", n, list)
		}
	}
	if ents, _ := os.ReadDir(proj); len(ents) != 3 { // .claude, .git, greeting.txt
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("the main checkout holds %q, want only .claude, .git and greeting.txt", names)
	}
}
