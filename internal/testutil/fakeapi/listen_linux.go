package fakeapi

import (
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// ListenIn listens on addr ("IP:PORT") inside the network namespace ns (an
// open /run/netns/NAME or /proc/PID/ns/net), for StartOn: the server is
// then reachable only through that namespace's network, as "the internet"
// of a test. The socket keeps its namespace; the caller's threads never
// change theirs. It needs CAP_SYS_ADMIN.
func ListenIn(ns *os.File, addr string) (net.Listener, error) {
	type result struct {
		l   net.Listener
		err error
	}
	c := make(chan result, 1)
	go func() {
		// Preconditions: this goroutine owns its thread until it exits;
		// the thread, now in ns, is never unlocked and so dies with the
		// goroutine instead of running other goroutines.
		runtime.LockOSThread()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			c <- result{err: fmt.Errorf("setns %s: %w", ns.Name(), os.NewSyscallError("setns", err))}
			return
		}
		l, err := net.Listen("tcp", addr)
		c <- result{l, err}
	}()
	r := <-c
	return r.l, r.err
}
