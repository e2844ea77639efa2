// Package handover is how netns-setup gives netns-dns what it needs of a
// sandbox namespace that netns-dns cannot enter (it holds CAP_NET_ADMIN,
// not CAP_SYS_ADMIN): two NETLINK_NETFILTER sockets opened in the
// namespace by root, one to pin addresses into the table inside it, one
// for its nflog. A socket stays in the namespace it was made in, wherever
// its descriptor goes.
//
// The sockets travel over a unix SOCK_SEQPACKET socket of netns-dns
// (netcfg.Config.HandoverSocket), one message each way: "NAME GENERATION"
// with the two descriptors (SCM_RIGHTS), then "ok" or "error: ...". The
// generation is the one of the namespace's policy file, so that netns-dns
// never pins into a namespace that has since been made anew. netns-dns
// takes them from root only (SO_PEERCRED).
package handover

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/nsname"
)

// Sockets are what a handover carries.
type Sockets struct {
	Name       string
	Generation int64
	// Pin is the socket for the pin sets of the table inside, Log the
	// one for its nflog group. Each is owned by whoever holds Sockets.
	Pin, Log int
}

// Close closes both sockets.
func (s Sockets) Close() {
	unix.Close(s.Pin)
	unix.Close(s.Log)
}

// ErrNotListening is returned by Send when nothing listens on the socket
// (netns-dns does not run).
var ErrNotListening = errors.New("netns-dns does not run")

// Send dials path, hands s over and returns the connection (Dial, Hand).
func Send(path string, s Sockets) (*net.UnixConn, error) {
	c, err := Dial(path)
	if err != nil {
		return nil, err
	}
	if err := Hand(c, s); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Dial connects to netns-dns's handover socket at path.
func Dial(path string) (*net.UnixConn, error) {
	c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, ErrNotListening
		}
		return nil, err
	}
	return c, nil
}

// Hand hands s over on c, a connection Dial returned, and waits for the
// answer. c stays open while netns-dns runs (its end closes when
// netns-dns stops: Alive). The caller keeps its copies of the
// descriptors.
func Hand(c *net.UnixConn, s Sockets) error {
	msg := fmt.Sprintf("%s %d", s.Name, s.Generation)
	if _, _, err := c.WriteMsgUnix([]byte(msg), unix.UnixRights(s.Pin, s.Log), nil); err != nil {
		return fmt.Errorf("hand over: %w", err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	defer c.SetReadDeadline(time.Time{})
	buf := make([]byte, 512)
	n, err := c.Read(buf)
	if err != nil {
		return fmt.Errorf("hand over: no answer: %w", err)
	}
	if reply := string(buf[:n]); reply != "ok" {
		return fmt.Errorf("netns-dns: %s", strings.TrimPrefix(reply, "error: "))
	}
	return nil
}

// Alive reports whether c, a connection Send returned, is still open at
// the other end.
func Alive(c *net.UnixConn) bool {
	raw, err := c.SyscallConn()
	if err != nil {
		return false
	}
	alive := false
	raw.Control(func(fd uintptr) {
		// Nothing to read (EAGAIN) while it is open; end of file (0)
		// once the other end closed.
		_, _, err := unix.Recvfrom(int(fd), make([]byte, 1), unix.MSG_PEEK|unix.MSG_DONTWAIT)
		alive = errors.Is(err, unix.EAGAIN)
	})
	return alive
}

// Listen listens on path (a stale socket file is replaced), for root only.
func Listen(path string) (*net.UnixListener, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	l, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// Serve reads the handovers on c, a connection accepted from a Listen
// listener, and passes each to take, whose error goes back to the sender;
// take owns the sockets it is given. It returns when c is closed.
func Serve(c *net.UnixConn, take func(Sockets) error) error {
	defer c.Close()
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil {
		return err
	}
	if cerr != nil {
		return os.NewSyscallError("getsockopt SO_PEERCRED", cerr)
	}
	if cred.Uid != 0 {
		c.Write([]byte("error: only root hands sockets over"))
		return fmt.Errorf("handover from uid %d refused: only root hands sockets over", cred.Uid)
	}
	buf := make([]byte, 512)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
		if err != nil || n == 0 {
			return nil
		}
		s, err := parse(buf[:n], oob[:oobn])
		if err == nil {
			err = take(s)
		}
		reply := "ok"
		if err != nil {
			reply = "error: " + err.Error()
		}
		if _, err := c.Write([]byte(reply)); err != nil {
			return nil
		}
	}
}

// parse reads one message; on an error it closes whatever descriptors came.
func parse(msg, oob []byte) (Sockets, error) {
	var fds []int
	if cmsgs, err := unix.ParseSocketControlMessage(oob); err == nil {
		for _, m := range cmsgs {
			if got, err := unix.ParseUnixRights(&m); err == nil {
				fds = append(fds, got...)
			}
		}
	}
	fail := func(format string, args ...any) (Sockets, error) {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return Sockets{}, fmt.Errorf(format, args...)
	}
	name, gen, ok := strings.Cut(string(msg), " ")
	g, err := strconv.ParseInt(gen, 10, 64)
	if !ok || err != nil || nsname.Check(name) != nil {
		return fail("bad handover message %q", msg)
	}
	if len(fds) != 2 {
		return fail("handover of %s: %d sockets, want 2", name, len(fds))
	}
	for _, fd := range fds {
		if p, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PROTOCOL); err != nil || p != unix.NETLINK_NETFILTER {
			return fail("handover of %s: not a netfilter socket", name)
		}
	}
	return Sockets{Name: name, Generation: g, Pin: fds[0], Log: fds[1]}, nil
}
