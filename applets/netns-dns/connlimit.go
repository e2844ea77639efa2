package netnsdns

import (
	"net"
	"net/netip"
	"sync"
)

// limitListener closes the connections of an address that holds max
// already.
type limitListener struct {
	net.Listener
	max int

	mu sync.Mutex
	n  map[netip.Addr]int
}

func newLimitListener(l net.Listener, max int) *limitListener {
	return &limitListener{Listener: l, max: max, n: map[netip.Addr]int{}}
}

// Accept returns the next connection within the limit of its address.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		src := netip.Addr{}
		if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
			src = ap.Addr().Unmap()
		}
		l.mu.Lock()
		over := l.n[src] >= l.max
		if !over {
			l.n[src]++
		}
		l.mu.Unlock()
		if over {
			c.Close()
			continue
		}
		return &limitedConn{Conn: c, release: sync.OnceFunc(func() { l.release(src) })}, nil
	}
}

func (l *limitListener) release(src netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[src]--; l.n[src] <= 0 {
		delete(l.n, src)
	}
}

type limitedConn struct {
	net.Conn
	release func()
}

func (c *limitedConn) Close() error {
	c.release()
	return c.Conn.Close()
}
