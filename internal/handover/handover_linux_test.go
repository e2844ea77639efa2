package handover

import (
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

func netfilterSocket(t *testing.T) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// TestSend: root's netfilter sockets arrive with the name and generation;
// anything else is refused with the reason, and a missing socket file is
// ErrNotListening.
func TestSend(t *testing.T) {
	testutil.RequireRoot(t)
	path := filepath.Join(t.TempDir(), "handover.sock")
	if _, err := Send(path, Sockets{Name: "agents", Pin: -1, Log: -1}); !errors.Is(err, ErrNotListening) {
		t.Fatalf("Send with nothing listening = %v, want ErrNotListening", err)
	}
	l, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := make(chan Sockets, 4)
	go func() {
		for {
			c, err := l.AcceptUnix()
			if err != nil {
				return
			}
			go Serve(c, func(s Sockets) error { got <- s; return nil })
		}
	}()
	c, err := Send(path, Sockets{Name: "agents", Generation: 42, Pin: netfilterSocket(t), Log: netfilterSocket(t)})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if !Alive(c) {
		t.Errorf("Alive = false while the other end is open")
	}
	c.Close()
	s := <-got
	if s.Name != "agents" || s.Generation != 42 || s.Pin < 0 || s.Log < 0 {
		t.Errorf("received %+v", s)
	}
	s.Close()

	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	if _, err := Send(path, Sockets{Name: "agents", Pin: p[0], Log: p[1]}); err == nil || !strings.Contains(err.Error(), "handover of agents: not a netfilter socket") {
		t.Errorf("Send of pipes = %v, want not a netfilter socket", err)
	}
	if _, err := Send(path, Sockets{Name: "../x", Pin: netfilterSocket(t), Log: netfilterSocket(t)}); err == nil || !strings.Contains(err.Error(), "bad handover message") {
		t.Errorf("Send of a bad name = %v, want bad handover message", err)
	}
}

// TestAlive: a connection is alive until the other end closes it.
func TestAlive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.sock")
	l, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := l.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	if !Alive(c) {
		t.Errorf("Alive = false while the other end is open")
	}
	s.Close()
	if Alive(c) {
		t.Errorf("Alive = true after the other end closed")
	}
}
