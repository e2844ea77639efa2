package claude

import (
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// terminal is the state of the launcher's terminal, saved before the
// sandbox starts so that it can be put back however the agent left it.
type terminal struct {
	fd    int
	saved *unix.Termios
}

// saveTerminal saves the modes of the first of stdin, stdout, stderr that
// is a terminal; without one it returns a terminal that does nothing.
func saveTerminal() *terminal {
	for fd := 0; fd <= 2; fd++ {
		if t, err := unix.IoctlGetTermios(fd, unix.TCGETS); err == nil {
			return &terminal{fd: fd, saved: t}
		}
	}
	return &terminal{fd: -1}
}

// restore puts the saved modes back. SIGTTOU is ignored first: a launcher
// in a background process group would otherwise be stopped by it.
func (t *terminal) restore() {
	if t.saved == nil {
		return
	}
	signal.Ignore(syscall.SIGTTOU)
	unix.IoctlSetTermios(t.fd, unix.TCSETS, t.saved)
}

// foreground reports whether the launcher is in the terminal's foreground
// process group, so that the terminal's own signals reach the sandbox too.
func (t *terminal) foreground() bool {
	if t.saved == nil {
		return false
	}
	pgrp, err := unix.IoctlGetInt(t.fd, unix.TIOCGPGRP)
	return err == nil && pgrp == unix.Getpgrp()
}
