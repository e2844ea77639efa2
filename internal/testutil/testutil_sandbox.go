package testutil

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// FakeAgent is the script NewSandbox installs as BinDir/claude. It writes
// "fake-claude" and then each of its arguments, every one terminated by a
// NUL byte, so tests can compare arguments byte for byte (see AgentArgs).
const FakeAgent = `#!/bin/sh
printf 'fake-claude\0'
printf '%s\0' "$@"
`

// NoNetns is the namespace name Sandbox runs use: it never exists, so the
// launcher runs without network namespacing.
const NoNetns = "sbxtest-none"

// Sandbox runs the launcher as the unprivileged test user with a fresh
// home, a fake agent and a private tmp of its own.
type Sandbox struct {
	User User
	// Home is the user's (fake) real home, 0700, owned by User.
	Home string
	// BinDir holds the fake agent `claude` (CLAUDE_SBX_BINDIR).
	BinDir string
	// LinkDir holds `claude`, a symlink to the multicall binary.
	LinkDir string
	// Env is appended to the environment of every run (later wins).
	Env []string
}

// NewSandbox prepares a Sandbox. It needs root, the test user and bwrap.
func NewSandbox(t testing.TB) *Sandbox {
	t.Helper()
	u := RequireUser(t)
	RequireCommand(t, "bwrap")
	home := UserHome(t, u)
	pub := PublicDir(t)
	bin := filepath.Join(pub, "agent", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Dir(bin), bin} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bin, "claude"), []byte(FakeAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	links := filepath.Join(pub, "links")
	if err := os.Mkdir(links, 0o755); err != nil {
		t.Fatal(err)
	}
	Link(t, links, "claude")
	return &Sandbox{
		User:    u,
		Home:    home,
		BinDir:  bin,
		LinkDir: links,
	}
}

// Result is the outcome of a launcher run.
type Result struct {
	Stdout, Stderr string
	// Code is the exit status, or 128+signal.
	Code int
}

func (r Result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
}

// Command returns the command that runs LinkDir/claude args... as the test
// user, with HOME=Home, CLAUDE_SBX_BINDIR, a namespace name
// that never exists (no netns), no XDG_RUNTIME_DIR (no systemd), then s.Env.
// Stdin is /dev/null unless the caller sets it.
func (s *Sandbox) Command(args ...string) *exec.Cmd {
	cmd := s.User.Command(s.Home, filepath.Join(s.LinkDir, "claude"), args...)
	cmd.Env = append(cmd.Env,
		"CLAUDE_SBX_BINDIR="+s.BinDir,
		"CLAUDE_SBX_NETNS="+NoNetns,
	)
	cmd.Env = append(cmd.Env, s.Env...)
	return cmd
}

// Run runs LinkDir/claude args... (see Command) and returns its result. A
// run that does not finish within five minutes is killed and fails the
// test (a hang, not a measurement).
func (s *Sandbox) Run(t testing.TB, args ...string) Result {
	t.Helper()
	return RunCommand(t, s.Command(args...))
}

// Shell runs `claude --shell -c script` (see Run).
func (s *Sandbox) Shell(t testing.TB, script string) Result {
	t.Helper()
	return s.Run(t, "--shell", "-c", script)
}

// WriteConfig writes Home/.claude-sandbox-init (owned by the user, 0600).
func (s *Sandbox) WriteConfig(t testing.TB, text string) {
	t.Helper()
	p := filepath.Join(s.Home, ".claude-sandbox-init")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	s.User.Chown(t, p)
}

// RunCommand runs cmd, capturing stdout and stderr unless they are set,
// and returns the result.
func RunCommand(t testing.TB, cmd *exec.Cmd) Result {
	t.Helper()
	return RunCommandWithin(t, cmd, 5*time.Minute)
}

// RunCommandWithin is RunCommand for a run that may take longer than five
// minutes on a busy machine (a compiler's first build); limit still only
// tells a hang.
func RunCommandWithin(t testing.TB, cmd *exec.Cmd, limit time.Duration) Result {
	t.Helper()
	var out, errb bytes.Buffer
	if cmd.Stdout == nil {
		cmd.Stdout = &out
	}
	if cmd.Stderr == nil {
		cmd.Stderr = &errb
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s %q did not finish within %v\nstdout:\n%s\nstderr:\n%s", cmd.Path, cmd.Args[1:], limit, out.String(), errb.String())
	}
	r := Result{Stdout: out.String(), Stderr: errb.String(), Code: exitCode(cmd.ProcessState)}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run %s: %v", cmd.Path, err)
	}
	return r
}

func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// AgentArgs splits the output of FakeAgent into the agent's arguments. It
// returns nil if out is not the fake agent's output.
func AgentArgs(out string) []string {
	parts := strings.Split(out, "\x00")
	if len(parts) < 2 || parts[0] != "fake-claude" || parts[len(parts)-1] != "" {
		return nil
	}
	return parts[1 : len(parts)-1]
}
