package netnsdns

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/sys/unix"
)

// udpServer answers UDP queries with a socket of its own for each
// namespace, so that one namespace's flood fills only its own receive
// buffer: the sockets share the address (SO_REUSEPORT) and a classic BPF
// program on the group steers each datagram to the socket of its source
// address; socket 0 takes every other source. Each socket has its reader,
// which drops what is over its namespace's rate before parsing anything.
type udpServer struct {
	listen netip.AddrPort
	r      *Resolver
	logf   func(string, ...any)
	lc     net.ListenConfig

	mu     sync.Mutex
	socks  []*net.UDPConn
	slot   map[netip.Addr]int // namespace address -> index in socks
	limits []*rateLimit       // per socket
	busy   []chan struct{}    // per socket: a token per query being answered
	closed bool
}

// maxUDPSockets bounds the sockets: past it, new namespaces share socket 0
// (a program of 2 instructions per namespace stays far below the kernel's
// 4096).
const maxUDPSockets = 1024

// Queries a namespace may send a second, and at once, before its reader
// drops them unread: far above what a program resolving names asks (a
// sequential client gets a few thousand answers a second), far below what a
// flood sends, so that it bounds the work a flood costs.
const (
	queryRate  = 10000
	queryBurst = 10000
)

// skfNetOff is SKF_NET_OFF of linux/filter.h: a BPF load at it plus k reads
// the network header (a reuseport program's packet starts at the UDP
// payload).
const skfNetOff = -0x100000

// newUDPServer binds the first socket (of unknown sources) with lc, which
// gets SO_REUSEPORT added.
func newUDPServer(ctx context.Context, listen netip.AddrPort, lc net.ListenConfig, r *Resolver, logf func(string, ...any)) (*udpServer, error) {
	s := &udpServer{listen: listen, r: r, logf: logf, slot: map[netip.Addr]int{}}
	control := lc.Control
	s.lc = lc
	s.lc.Control = func(network, address string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1) })
		if err := errors.Join(err, serr); err != nil {
			return err
		}
		if control != nil {
			return control(network, address, c)
		}
		return nil
	}
	if err := s.open(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// open adds a socket to the group and starts its reader; s.mu is held or
// s not shared yet.
func (s *udpServer) open(ctx context.Context) error {
	pc, err := s.lc.ListenPacket(ctx, "udp4", s.listen.String())
	if err != nil {
		return err
	}
	c := pc.(*net.UDPConn)
	l := &rateLimit{}
	busy := make(chan struct{}, maxInflight)
	s.socks = append(s.socks, c)
	s.limits = append(s.limits, l)
	s.busy = append(s.busy, busy)
	go s.read(c, l, busy)
	return nil
}

// SetNamespaces gives each address its own socket and steers its queries
// there.
func (s *udpServer) SetNamespaces(addrs []netip.Addr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	keep := map[netip.Addr]bool{}
	for _, a := range addrs {
		keep[a] = true
	}
	used := map[int]bool{}
	for a, i := range s.slot {
		if !keep[a] {
			delete(s.slot, a)
			continue
		}
		used[i] = true
	}
	next := 1
	for _, a := range addrs {
		if _, ok := s.slot[a]; ok {
			continue
		}
		for used[next] {
			next++
		}
		if next >= maxUDPSockets {
			break // the rest share socket 0
		}
		if next >= len(s.socks) {
			if err := s.open(context.Background()); err != nil {
				s.logf("udp socket of %s: %v: its queries share the socket of unknown sources", a, err)
				break
			}
		}
		s.slot[a] = next
		s.limits[next].reset()
		used[next] = true
	}
	if err := s.steer(); err != nil {
		s.logf("steering queries to a socket per namespace: %v: the namespaces share the sockets' buffers", err)
	}
}

// steer attaches the program that maps each namespace's address to its
// socket, everything else to socket 0. The index of a socket in the group
// is the order it was bound in: none is closed before the end.
func (s *udpServer) steer() error {
	prog := []unix.SockFilter{{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 1<<32 + skfNetOff + 12}} // the IPv4 source address
	for a, i := range s.slot {
		prog = append(prog,
			unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: binary.BigEndian.Uint32(a.AsSlice())},
			unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: uint32(i)})
	}
	prog = append(prog, unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: 0})
	raw, err := s.socks[0].SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptSockFprog(int(fd), unix.SOL_SOCKET, unix.SO_ATTACH_REUSEPORT_CBPF, &unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]})
	})
	return errors.Join(err, serr)
}

// Close closes every socket; the readers end.
func (s *udpServer) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, c := range s.socks {
		c.Close()
	}
}

// read serves one socket until it is closed. At most maxInflight of its
// queries are answered at once; it drops what comes beyond that unread, so
// that a namespace's flood holds a bounded amount of memory however little
// CPU time netns-dns gets.
func (s *udpServer) read(c *net.UDPConn, l *rateLimit, busy chan struct{}) {
	buf := make([]byte, 4096)
	for {
		n, _, flags, src, err := c.ReadMsgUDPAddrPort(buf, nil)
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil || flags&unix.MSG_TRUNC != 0 || !l.allow(time.Now()) {
			continue
		}
		select {
		case busy <- struct{}{}:
		default:
			continue
		}
		b := slices.Clone(buf[:n])
		go func() {
			defer func() { <-busy }()
			s.answer(c, src, b)
		}()
	}
}

// answer answers one datagram; responses (a reflected answer of another
// server) get none. A held query is parked with its socket and source in
// the resolver's hold table, and this goroutine ends: the reply is sent
// by whoever releases it.
func (s *udpServer) answer(c *net.UDPConn, src netip.AddrPort, b []byte) {
	q := new(dns.Msg)
	if err := q.Unpack(b); err != nil || q.Response {
		return
	}
	send := func(resp *dns.Msg) { sendUDP(c, src, q, resp) }
	if resp := s.r.Handle(context.Background(), src.Addr().Unmap(), q, send); resp != nil {
		send(resp)
	}
}

// sendUDP writes resp to src, truncated to what q said it takes.
func sendUDP(c *net.UDPConn, src netip.AddrPort, q, resp *dns.Msg) {
	if resp == nil {
		return
	}
	size := dns.MinMsgSize
	if o := q.IsEdns0(); o != nil {
		size = int(min(max(o.UDPSize(), dns.MinMsgSize), 1232))
	}
	resp.Truncate(size)
	out, err := resp.Pack()
	if err != nil {
		return
	}
	c.WriteToUDPAddrPort(out, src)
}

// rateLimit is a token bucket of queryRate a second.
type rateLimit struct {
	mu     sync.Mutex
	tokens float64
	last   time.Time
}

func (l *rateLimit) reset() {
	l.mu.Lock()
	l.tokens, l.last = queryBurst, time.Time{}
	l.mu.Unlock()
}

func (l *rateLimit) allow(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last.IsZero() {
		l.tokens = queryBurst
	} else if d := now.Sub(l.last); d > 0 {
		l.tokens = min(queryBurst, l.tokens+d.Seconds()*queryRate)
	}
	l.last = now
	if l.tokens < 1 {
		return false
	}
	l.tokens--
	return true
}
