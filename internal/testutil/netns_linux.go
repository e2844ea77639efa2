package testutil

import (
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/nsname"
)

// InNetnsThread runs f on a thread that joined namespace ns; the thread is
// thrown away afterwards (it stays locked, so the runtime ends it with the
// goroutine), so no other goroutine ever runs in ns.
func InNetnsThread(ns string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		fd, err := unix.Open(nsname.Path(ns), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- err
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			errc <- err
			return
		}
		errc <- f()
	}()
	return <-errc
}
