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
	excl  bool          // exclusive mode (TIOCEXCL) was on
	size  *unix.Winsize // nil: unknown
	lent  bool          // the chain's process group has the terminal
	modes *unix.Termios // the chain's modes while the launcher has taken it back
	// The window size when the launcher took the terminal back: a
	// resize meanwhile sent SIGWINCH to another group.
	stopSize *unix.Winsize
}

// saveTerminal saves the state of the first of stdin, stdout, stderr that
// is a terminal; without one it returns a terminal that does nothing.
func saveTerminal() *terminal {
	for fd := 0; fd <= 2; fd++ {
		if t, err := unix.IoctlGetTermios(fd, unix.TCGETS); err == nil {
			excl, _ := unix.IoctlGetUint32(fd, unix.TIOCGEXCL)
			size, _ := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
			return &terminal{fd: fd, saved: t, excl: excl != 0, size: size}
		}
	}
	return &terminal{fd: -1}
}

// restore takes the terminal back from the chain and puts back its modes,
// flow (TCOON), exclusive mode and window size.
//
// The window size is put back too: the agent could have set it, and the
// kernel cannot tell that from the user resizing the window meanwhile, in
// which case the shell sees the old size until the next resize.
func (t *terminal) restore() {
	if t.saved == nil {
		return
	}
	// A launcher in a background process group would otherwise be
	// stopped by SIGTTOU.
	signal.Ignore(syscall.SIGTTOU)
	t.reclaim(false)
	t.putBack()
	// Not while another job has the terminal: the reset would be its.
	if !t.controlling() || t.foreground() {
		writeOut(softReset + titlePop)
	}
	if t.size != nil {
		if now, err := unix.IoctlGetWinsize(t.fd, unix.TIOCGWINSZ); err == nil && *now != *t.size {
			unix.IoctlSetWinsize(t.fd, unix.TIOCSWINSZ, t.size)
		}
	}
}

// putBack restores output flow, the saved modes and exclusive mode. Flow
// comes first: with output stopped (TCOOFF) nothing the user's shell
// writes would show.
func (t *terminal) putBack() {
	unix.IoctlSetInt(t.fd, unix.TCXONC, unix.TCOON)
	unix.IoctlSetTermios(t.fd, unix.TCSETS, t.saved)
	if !t.excl {
		unix.IoctlSetInt(t.fd, unix.TIOCNXCL, 0)
	}
}

// foreground reports whether the launcher is in the terminal's foreground
// process group (and the terminal is its controlling terminal).
func (t *terminal) foreground() bool {
	if t.saved == nil {
		return false
	}
	pgrp, err := unix.IoctlGetInt(t.fd, unix.TIOCGPGRP)
	return err == nil && pgrp == unix.Getpgrp()
}

// controlling reports whether the launcher's terminal is its controlling
// terminal (TIOCGPGRP answers only for that one).
func (t *terminal) controlling() bool {
	if t.saved == nil {
		return false
	}
	_, err := unix.IoctlGetInt(t.fd, unix.TIOCGPGRP)
	return err == nil
}

// lend gives the terminal to process group pgid, with the modes it had
// when it was taken back, if the launcher is in the foreground; if the
// window changed size meanwhile, the group gets the SIGWINCH it missed.
//
// Preconditions: SIGTTOU is ignored.
func (t *terminal) lend(pgid int) {
	if t.lent || !t.foreground() {
		return
	}
	if t.modes != nil {
		unix.IoctlSetTermios(t.fd, unix.TCSETS, t.modes)
		t.modes = nil
	}
	if unix.IoctlSetPointerInt(t.fd, unix.TIOCSPGRP, pgid) != nil {
		return
	}
	// The title the user has, saved again for the pop at the next stop
	// or the end (termreset_linux.go).
	writeOut(titlePush)
	t.lent = true
	if t.stopSize != nil {
		if now, err := unix.IoctlGetWinsize(t.fd, unix.TIOCGWINSZ); err == nil && *now != *t.stopSize {
			unix.Kill(-pgid, unix.SIGWINCH)
		}
		t.stopSize = nil
	}
}

// reclaim takes the terminal back for the launcher's process group if it
// was lent, and reports whether it was. With stop, as for a stopped job,
// it also saves the chain's modes for lend and puts the launcher's back.
//
// Preconditions: SIGTTOU is ignored (the launcher is in the background).
func (t *terminal) reclaim(stop bool) bool {
	if !t.lent {
		return false
	}
	t.lent = false
	if stop {
		t.modes, _ = unix.IoctlGetTermios(t.fd, unix.TCGETS)
		t.stopSize, _ = unix.IoctlGetWinsize(t.fd, unix.TIOCGWINSZ)
	}
	unix.IoctlSetPointerInt(t.fd, unix.TIOCSPGRP, unix.Getpgrp())
	if stop {
		t.putBack()
		writeOut(softReset + titlePop)
	}
	return true
}
