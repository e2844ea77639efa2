package claude

import "golang.org/x/sys/unix"

// softReset turns off the terminal modes a program in the sandbox may
// leave on, written to stdout when it is a terminal: when the chain ends
// and when it stops (Ctrl-Z). Each sequence is one a terminal that does not
// know it ignores, and none moves the cursor or clears the user's screen:
//
//   - the alternate screen off with 1047 and 47, not 1049, whose reset
//     also restores a saved cursor position (the top left when none was
//     saved, and the prompt would overwrite the output);
//   - mouse reporting off (9, 1000, 1002, 1003, 1005, 1006, 1015), focus
//     reporting (1004) off: a click would otherwise type escape sequences
//     into the shell;
//   - bracketed paste (2004) off: a terminal cannot be asked for it
//     portably, and off is safe either way, since the shells that use it
//     (bash 5.1 and later, zsh, fish) turn it on again at every prompt and
//     one that does not would get the markers typed into every paste;
//   - the cursor visible (25), autowrap on (7), insert mode off, normal
//     cursor keys (1) and keypad (DECKPNM), the ASCII character set in G0
//     and shifted in, attributes reset (SGR 0);
//   - xterm's modifyOtherKeys to its default and the kitty keyboard
//     protocol's stack popped (a pop of more entries than were pushed
//     empties it; shells that use it push again at their prompt).
//
// The window title is put back by the push (titlePush) before the chain
// starts and the pop after, on terminals that keep a title stack (xterm
// and those like it); elsewhere it stays as the sandbox set it.
const softReset = "\x1b[?1047l\x1b[?47l" +
	"\x1b[?9l\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1005l\x1b[?1006l\x1b[?1015l\x1b[?1004l" +
	"\x1b[?2004l" +
	"\x1b[?25h\x1b[?7h\x1b[4l\x1b[?1l\x1b>\x1b(B\x0f\x1b[0m" +
	"\x1b[>4m\x1b[<99u"

const (
	titlePush = "\x1b[22;0t"
	titlePop  = "\x1b[23;0t"
)

// stdoutTerminal reports whether stdout is a terminal.
func stdoutTerminal() bool {
	_, err := unix.IoctlGetTermios(1, unix.TCGETS)
	return err == nil
}

// writeOut writes s to stdout if it is a terminal. Errors are ignored:
// the terminal may be gone.
func writeOut(s string) {
	if !stdoutTerminal() {
		return
	}
	for b := []byte(s); len(b) > 0; {
		n, err := unix.Write(1, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return
		}
		b = b[n:]
	}
}
