package netnsdns

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/netctl"
)

// maxControlConns bounds the open control connections of one user: each
// holds a file and a goroutine, and a stream an event buffer.
const maxControlConns = 64

// maxStrangerConns bounds the open control connections of every user who
// owns no namespace, together: a user with subordinate uids (a rootless
// container's range, 65536 by default) connects as each of them, and a
// bound per uid alone would not bound netns-dns's files and memory. Such
// a connection can only learn that it owns nothing.
const maxStrangerConns = 16

// controlIdle is how long a connection may say nothing (no request, or a
// reply not read) before it is closed: idle connections would otherwise
// hold the bounds above and lock other users out. A stream (watch,
// session) of an owner is exempt once its reply is sent; one of a user
// who owns no namespace is closed after controlIdle, unless the user owns
// one by then. A variable for tests.
var controlIdle = 5 * time.Second

// strangers is the key of the connections of users who own no namespace
// (no uid: -1 is none).
const strangers = ^uint32(0)

// controlServer serves the control socket.
type controlServer struct {
	r    *Resolver
	ln   *net.UnixListener
	logf func(string, ...any)

	mu    sync.Mutex
	conns map[uint32]int
}

// listenControl makes the control socket at path, connectable by every
// user (mode 0666: the kernel names each caller, and Control decides),
// in a directory only root can change. A socket left by an earlier run is
// replaced; anything else at path is an error.
func listenControl(path string) (*net.UnixListener, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return nil, &os.PathError{Op: "lstat", Path: dir, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Uid != uint32(os.Geteuid()) || st.Mode&0o022 != 0 {
		return nil, fmt.Errorf("%s: not a directory of netns-dns's user writable by it alone: remove it and start netns-dns again", dir)
	}
	if err := unix.Lstat(path, &st); err == nil {
		if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
			return nil, fmt.Errorf("%s exists and is not a socket: remove it", path)
		}
		os.Remove(path)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	ln.SetUnlinkOnClose(true)
	if err := os.Chmod(path, 0o666); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// serve accepts connections until the listener is closed.
func (s *controlServer) serve() {
	for {
		c, err := s.ln.AcceptUnix()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		go s.serveConn(c)
	}
}

// peerCred is the uid and the groups (primary and supplementary) of the
// process at the other end of c, as the kernel recorded them at connect
// (SO_PEERCRED, SO_PEERGROUPS).
func peerCred(c *net.UnixConn) (uint32, []uint32, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, nil, err
	}
	var cred *unix.Ucred
	var groups []uint32
	var serr error
	if err := raw.Control(func(fd uintptr) {
		if cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); serr == nil {
			groups, serr = peerGroups(int(fd))
		}
	}); err != nil {
		return 0, nil, err
	}
	if serr != nil {
		return 0, nil, serr
	}
	return cred.Uid, append(groups, cred.Gid), nil
}

// peerGroups reads SO_PEERGROUPS: the peer's supplementary gids.
func peerGroups(fd int) ([]uint32, error) {
	buf := make([]uint32, 64)
	for {
		n := uint32(len(buf) * 4)
		_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_PEERGROUPS,
			uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n)), 0)
		switch {
		case e == unix.ERANGE && int(n/4) > len(buf):
			buf = make([]uint32, n/4)
		case e != 0:
			return nil, os.NewSyscallError("getsockopt SO_PEERGROUPS", e)
		default:
			return buf[:n/4], nil
		}
	}
}

func (s *controlServer) serveConn(c *net.UnixConn) {
	defer c.Close()
	conn := netctl.NewConn(c)
	uid, gids, err := peerCred(c)
	if err != nil {
		conn.Send(netctl.Reply{Error: fmt.Sprintf("who is calling: %v", err)})
		return
	}
	if s.r.Refresh != nil {
		s.r.Refresh() // a namespace whose up just finished is known
	}
	key, limit := uid, maxControlConns
	if uid != 0 && len(s.r.owned(uid, gids)) == 0 {
		key, limit = strangers, maxStrangerConns
	}
	if !s.enter(key, limit) {
		if key == strangers {
			conn.Send(netctl.Reply{Error: fmt.Sprintf("uid %d owns no namespace, and users who own none have %d control connections open already: try again later", uid, maxStrangerConns)})
			return
		}
		conn.Send(netctl.Reply{Error: fmt.Sprintf("uid %d has %d control connections open already: close some", uid, maxControlConns)})
		return
	}
	defer func() { s.leave(key) }() // key changes if a stranger comes to own a namespace
	for {
		var req netctl.Request
		c.SetReadDeadline(time.Now().Add(controlIdle))
		if err := conn.Recv(&req); err != nil {
			switch {
			case errors.Is(err, os.ErrDeadlineExceeded):
				c.SetWriteDeadline(time.Now().Add(controlIdle))
				conn.Send(netctl.Reply{Error: fmt.Sprintf("no request for %v: connection closed", controlIdle)})
			case !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.EOF):
				c.SetWriteDeadline(time.Now().Add(controlIdle))
				conn.Send(netctl.Reply{Error: fmt.Sprintf("bad request: %v: send one JSON object a line", err)})
			}
			return
		}
		rep := s.r.ControlAs(uid, gids, req)
		if rep.Error == "" && (req.Op == netctl.OpWatch || req.Op == netctl.OpSession) {
			c.SetReadDeadline(time.Time{})
			s.stream(conn, uid, gids, req, rep, &key)
			return
		}
		c.SetWriteDeadline(time.Now().Add(controlIdle))
		if err := conn.Send(rep); err != nil {
			return
		}
		c.SetWriteDeadline(time.Time{})
	}
}

// stream sends rep and then the events of its namespaces until the client
// closes the connection; a session's end drops the session approvals of
// a namespace with no other session. A stream counted among the strangers'
// connections (*key) ends after controlIdle unless its user owns a
// namespace by then; it then counts as that user's (*key becomes uid).
func (s *controlServer) stream(conn *netctl.Conn, uid uint32, gids []uint32, req netctl.Request, rep netctl.Reply, key *uint32) {
	session := req.Op == netctl.OpSession
	sub := &subscriber{uid: uid, gids: gids, session: session, asks: !session || req.Asks, events: make(chan netctl.Event, eventBuffer)}
	if req.Namespace == "" {
		sub.all = true
	} else {
		sub.nss = rep.Namespaces
	}
	// The stream counts from before its reply: a client that acts on the
	// reply (a query it expects to be held) must find it listening.
	s.r.hub.add(sub)
	defer func() { s.r.endSessions(s.r.hub.remove(sub)) }()
	if err := conn.Send(rep); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		io.Copy(io.Discard, conn.Raw()) // until the client closes
		close(done)
	}()
	var idle <-chan time.Time
	if *key == strangers {
		t := time.NewTimer(controlIdle)
		defer t.Stop()
		idle = t.C
	}
	for {
		select {
		case <-done:
			return
		case <-idle:
			idle = nil
			if s.r.Refresh != nil {
				s.r.Refresh()
			}
			if len(s.r.owned(uid, gids)) == 0 || !s.enter(uid, maxControlConns) {
				conn.Raw().SetWriteDeadline(time.Now().Add(controlIdle))
				conn.Send(netctl.Reply{Error: fmt.Sprintf("uid %d owns no namespace: stream closed after %v; watch again once one is up", uid, controlIdle)})
				return
			}
			s.leave(strangers)
			*key = uid
		case e := <-sub.events:
			if err := conn.Send(e); err != nil {
				return
			}
		}
	}
}

func (s *controlServer) enter(uid uint32, limit int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns == nil {
		s.conns = map[uint32]int{}
	}
	if s.conns[uid] >= limit {
		return false
	}
	s.conns[uid]++
	return true
}

func (s *controlServer) leave(uid uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns[uid]--; s.conns[uid] <= 0 {
		delete(s.conns, uid)
	}
}
