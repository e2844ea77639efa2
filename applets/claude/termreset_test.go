//go:build linux

package claude_test

import (
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
	"golang.org/x/sys/unix"
)

// What a program in the sandbox turns on and leaves on: the alternate
// screen, mouse and focus reporting, bracketed paste, a hidden cursor,
// application keypad and cursor keys, the kitty keyboard protocol, a title.
const leftOn = `printf '\033[?1049h\033[?1000h\033[?1002h\033[?1003h\033[?1006h\033[?1015h\033[?1004h\033[?2004h\033[?25l\033=\033[?1h\033[>1u\033]2;pwned\007'`

// The sequences that must follow the sandbox's output to turn them off.
var resets = []string{
	"\x1b[?1047l", "\x1b[?1000l", "\x1b[?1002l", "\x1b[?1003l", "\x1b[?1006l", "\x1b[?1015l", "\x1b[?1004l",
	"\x1b[?2004l", "\x1b[?25h", "\x1b>", "\x1b[?1l", "\x1b[<99u", "\x1b[23;0t",
}

func missingResets(out, after string) []string {
	_, rest, ok := strings.Cut(out, after)
	if !ok {
		return resets
	}
	var miss []string
	for _, r := range resets {
		if !strings.Contains(rest, r) {
			miss = append(miss, r)
		}
	}
	return miss
}

// TestTerminalModesReset: after the sandbox leaves those modes on and
// exits, the launcher's bytes turn them off; the title was pushed before.
func TestTerminalModesReset(t *testing.T) {
	s := testutil.NewSandbox(t)
	m := marker(t)
	j := startPtyJob(t, s, false, "--shell", "-c", leftOn+` && echo "set-$0"`, m)
	if code := j.exited(); code != 0 {
		t.Fatalf("launcher exit %d, want 0\npty output:\n%q", code, j.output())
	}
	j.waitOutput("set-" + m)
	var miss []string
	waitFor(t, "the reset after the sandbox's output", func() bool { miss = missingResets(j.output(), "set-"+m); return len(miss) == 0 })
	if before, _, _ := strings.Cut(j.output(), "set-"+m); !strings.Contains(before, "\x1b[22;0t") {
		t.Errorf("the title was not pushed before the sandbox started: %q", before)
	}
}

// TestTerminalModesResetOnStop: so it is when the sandbox stops on Ctrl-Z,
// before the user's shell gets the terminal.
func TestTerminalModesResetOnStop(t *testing.T) {
	s := testutil.NewSandbox(t)
	m := marker(t)
	j := startPtyJob(t, s, false, "--shell", "-c", leftOn+` && echo "ready-$0" && read -r line && echo "got:$line"`, m)
	j.waitOutput("ready-" + m)
	modes := j.termios()
	if _, err := j.master.Write([]byte{modes.Cc[unix.VSUSP]}); err != nil {
		t.Fatal(err)
	}
	j.event("stopped ")
	var miss []string
	waitFor(t, "the reset after the sandbox's output", func() bool { miss = missingResets(j.output(), "ready-"+m); return len(miss) == 0 })
	if _, err := j.conn.Write([]byte("fg\n")); err != nil {
		t.Fatal(err)
	}
	chain := 0
	waitFor(t, "the sandbox to get the terminal back", func() bool { chain = j.foreground(); return chain != j.pgid })
	if _, err := j.master.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	if code := j.exited(); code != 0 {
		t.Errorf("launcher exit %d after fg, want 0\npty output:\n%q", code, j.output())
	}
	j.waitOutput("got:hello")
}
