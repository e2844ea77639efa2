//go:build linux

package claude_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil/fakeapi"
)

// The real agent runs `go test ./...` in a Go project through its Bash
// tool, with Go where go.dev puts it and only on the user's PATH: the
// toolchain is found with no config, and the tests pass inside.
func TestE2EAgentLoopGoTest(t *testing.T) {
	s := loopSandbox(t)
	requireGoAt(t, goRoot)
	m := marker(t)
	proj := userProject(t, s, "goproj")
	writeUserFile(t, s, filepath.Join(proj, "go.mod"), "module example.test/loop\n\ngo 1.21\n", 0o644)
	writeUserFile(t, s, filepath.Join(proj, "loop.go"), "package loop\n\nfunc Add(a, b int) int { return a + b }\n", 0o644)
	writeUserFile(t, s, filepath.Join(proj, "loop_test.go"), "package loop\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(Add(2, 3))\n\t}\n}\n", 0o644)
	s.Env = append(s.Env, "PATH="+goRoot+"/bin:/usr/bin:/bin")
	api := fakeapi.Start(t, fakeapi.New(
		// With an empty build cache, go test compiles the standard
		// library first: the Bash tool's longest timeout (10 min), not
		// its 2 min default.
		fakeapi.Turn{fakeapi.ToolUse("gotest", "Bash", map[string]any{
			"command": "go test -count=1 ./... 2>&1; echo rc=$?", "description": "run the tests", "timeout": 600000})},
		fakeapi.Turn{fakeapi.Text("Tested " + m)},
	))
	r := runAgent(t, s, api, proj)
	if r.Code != 0 || !strings.Contains(r.Stdout, "Tested "+m) {
		t.Errorf("claude -p through the launcher: %v", r)
	}
	rs := results(t, api, 2)
	got := rs["gotest"].Content
	if !strings.Contains(got, "ok  \texample.test/loop") || !strings.HasSuffix(got, "rc=0") {
		t.Errorf("go test through the agent's Bash tool = %q, want it to pass", got)
	}
}
