package netnsdns

import (
	"fmt"
	"net"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/handover"
	"github.com/claude-sandbox/claude-sandbox/internal/nft"
)

// insides are the sockets netns-setup handed over, by namespace: to pin
// into the table inside each (nft.InsideTable) and to read its nflog (the
// drops of that table: the host, the LAN, the metadata address, and in
// allowlist mode every address not pinned). netns-dns cannot open them
// itself: that takes entering the namespace.
type insides struct {
	log  *DenialLog
	logf func(string, ...any)
	// taken, if set, runs once the socket of namespace name serves: the
	// approved sets are emptied then (Resolver.ResetFlows).
	taken func(name string)

	takeMu sync.Mutex // one handover at a time: one nflog binding per namespace
	mu     sync.Mutex
	m      map[string]*inside
}

type inside struct {
	gen  int64
	pin  *nft.FdPinner
	stop chan struct{}
	done chan struct{}
}

func (in *inside) close() {
	close(in.stop)
	<-in.done // the reader closes the nflog socket, which unbinds its group
	in.pin.Close()
}

// take holds s, replacing what namespace s.Name had. The new pinner
// serves from the moment the old one goes: a guard that hands the sockets
// over again (at its start, after up did) never leaves the namespace
// without one, when its allowed names would get SERVFAIL and the launcher
// would refuse to start.
func (is *insides) take(s handover.Sockets) error {
	is.takeMu.Lock()
	defer is.takeMu.Unlock()
	pin, err := nft.NewFdPinner(s.Pin)
	if err != nil {
		s.Close()
		return err
	}
	in := &inside{gen: s.Generation, pin: pin, stop: make(chan struct{}), done: make(chan struct{})}
	is.mu.Lock()
	if is.m == nil {
		is.m = map[string]*inside{}
	}
	old := is.m[s.Name]
	is.m[s.Name] = in
	is.mu.Unlock()
	if old != nil {
		old.close() // and its nflog socket: one binding of the group at a time
	}
	if err := nflogBind(s.Log); err != nil {
		is.mu.Lock()
		if is.m[s.Name] == in {
			delete(is.m, s.Name)
		}
		is.mu.Unlock()
		close(in.done)
		pin.Close()
		unix.Close(s.Log)
		return fmt.Errorf("nflog inside %s: %w", s.Name, err)
	}
	go func() {
		defer close(in.done)
		defer unix.Close(s.Log)
		stopped := func() bool {
			select {
			case <-in.stop:
				return true
			default:
				return false
			}
		}
		if err := nflogRead(stopped, s.Log, s.Name, is.log); err != nil {
			is.logf("denial log of the drops inside %s: %v", s.Name, err)
		}
	}()
	if is.taken != nil {
		is.taken(s.Name)
	}
	return nil
}

// pinner is the pinner of namespace name's table inside, if netns-dns has
// the socket of the namespace made at generation.
func (is *insides) pinner(name string, generation int64) Pinner {
	is.mu.Lock()
	defer is.mu.Unlock()
	in := is.m[name]
	if in == nil || in.gen != generation {
		return nil
	}
	return in.pin
}

// keep closes the sockets of the namespaces present does not report
// (removed: down deleted their policy files).
func (is *insides) keep(present func(name string) bool) {
	is.takeMu.Lock()
	defer is.takeMu.Unlock()
	var gone []*inside
	is.mu.Lock()
	for name, in := range is.m {
		if !present(name) {
			gone = append(gone, in)
			delete(is.m, name)
		}
	}
	is.mu.Unlock()
	for _, in := range gone {
		in.close()
	}
}

// serveHandovers takes the sockets netns-setup hands over on l until it is
// closed.
func (is *insides) serveHandovers(l *net.UnixListener) {
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			return
		}
		go func() {
			take := func(s handover.Sockets) error {
				err := is.take(s)
				if err != nil {
					is.logf("sockets of %s: %v", s.Name, err)
				}
				return err
			}
			if err := handover.Serve(c, take); err != nil {
				is.logf("%v", err)
			}
		}()
	}
}
