package netnsenter

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// What the entry point (entry_linux_$GOARCH.s, the ELF entry of the
// netns-enter build) records before Go's runtime starts. The runtime then
// installs its handlers over signals the caller ignored (execve resets
// handled signals to the default, so an ignored SIGTERM would be lost) and
// unblocks signals it needs, so neither can be read later, from
// /proc/self/status or anywhere else. Written once, before any goroutine
// exists; read-only after.
var (
	entryRan      uint64     // 1: the entry point ran
	entryErr      uint64     // OR of its system calls' results: 0 when all succeeded
	entryDropped  uint64     // 1: it set the euid to the real uid (saved uid root)
	entryHandlers [65]uint64 // sa_handler of signals 1..64 as the caller left them
	entryMask     uint64     // the caller's signal mask
	//lint:ignore U1000 used by the entry point only (assembly)
	entryAct [4]uint64 // scratch: the kernel's struct sigaction
)

// EntrySymbol is the entry point's symbol, for -ldflags=-E.
const EntrySymbol = "_netnsenter_rt0"

var errNoEntry = errors.New("netns-enter was linked without its entry point, so it cannot keep the caller's signals: build it with make build/netns-enter (-ldflags=-E=" + EntrySymbol + ", linux/amd64 or linux/arm64)")

// checkEntry fails unless the entry point ran and all its system calls
// succeeded.
func checkEntry() error {
	if entryRan != 1 {
		return errNoEntry
	}
	if entryErr != 0 {
		return fmt.Errorf("the entry point's system calls failed (%#x)", entryErr)
	}
	return nil
}

const sigIgn = 1 // SIG_IGN

// sigPerThreadSyscall is the signal Go's runtime (without cgo) sends every
// thread to run an all-threads system call such as setresuid: SIGRTMIN+1,
// which glibc programs hand their children ignored.
const sigPerThreadSyscall = 33

// ignoreSignals ignores again the signals the caller ignored, for the whole
// process. Called first with all false, so that such a signal arriving while
// netns-enter runs is ignored too (Go's handler would make it fatal), except
// those the runtime may still need: sigPerThreadSyscall (Go's all-threads
// system calls wait for every thread to handle it; netns-enter changes its
// credentials on its own thread only, but keeps the runtime's machinery
// working) and SIGURG (preemption). Called again
// with all true just before execve, which passes the dispositions on.
// Signals Go handles that the caller did not ignore become the default on
// execve, as they were. Raw system calls: the runtime must not know.
func ignoreSignals(all bool) error {
	for sig := 1; sig <= 64; sig++ {
		if entryHandlers[sig] != sigIgn || !all && (sig == sigPerThreadSyscall || sig == int(unix.SIGURG)) {
			continue
		}
		act := [4]uint64{sigIgn} // sa_handler, sa_flags, sa_restorer, sa_mask
		if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0); e != 0 {
			return fmt.Errorf("ignore signal %d: %w", sig, os.NewSyscallError("rt_sigaction", e))
		}
	}
	return nil
}

// restoreMask sets this thread's signal mask to the caller's, for execve to
// pass on. Until then the mask is Go's (a signal the caller blocked is not
// held during netns-enter's own few milliseconds: the runtime's threads do
// not block it).
//
// Preconditions: the OS thread is locked and execs next, unprivileged.
func restoreMask() error {
	set := unix.Sigset_t{Val: [16]uint64{entryMask}}
	if err := unix.PthreadSigmask(unix.SIG_SETMASK, &set, nil); err != nil {
		return fmt.Errorf("restore the signal mask: %w", err)
	}
	return nil
}
