// Package netctltest is a fake netns-dns control socket for tests: it
// records every request, answers each op with a scripted Reply, and sends
// scripted Events to the connections that asked for a stream (watch,
// session).
package netctltest

import (
	"net"
	"path/filepath"
	"sync"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/netctl"
)

// Server is the fake. Its zero Reply for an op is an empty success.
type Server struct {
	// Path is the socket's path.
	Path string

	ln      net.Listener
	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every request and stream change
	replies map[string]netctl.Reply
	funcs   map[string]func(netctl.Request) netctl.Reply
	reqs    []netctl.Request
	streams map[*netctl.Conn]netctl.Request
	wg      sync.WaitGroup
}

// New listens on a socket in a directory of t's and stops at t's end.
func New(t testing.TB) *Server {
	t.Helper()
	path := filepath.Join(t.TempDir(), "control.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Path: path, ln: ln, changed: make(chan struct{}), replies: map[string]netctl.Reply{}, funcs: map[string]func(netctl.Request) netctl.Reply{}, streams: map[*netctl.Conn]netctl.Request{}}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.Close)
	return s
}

// Reply sets the answer to every later request of op.
func (s *Server) Reply(op string, rep netctl.Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies[op] = rep
}

// Handle makes f answer every later request of op (it runs with the
// server's lock held: it must not call the server).
func (s *Server) Handle(op string, f func(netctl.Request) netctl.Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.funcs[op] = f
}

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []netctl.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]netctl.Request(nil), s.reqs...)
}

// Ops returns the ops of the requests received so far.
func (s *Server) Ops() []string {
	var ops []string
	for _, r := range s.Requests() {
		ops = append(ops, r.Op)
	}
	return ops
}

// WaitRequest waits until a request of op has arrived and returns the
// first; done ends the wait (nil: wait for ever).
func (s *Server) WaitRequest(op string, done <-chan struct{}) (netctl.Request, bool) {
	for {
		s.mu.Lock()
		for _, r := range s.reqs {
			if r.Op == op {
				s.mu.Unlock()
				return r, true
			}
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-done:
			return netctl.Request{}, false
		}
	}
}

// Streams returns how many connections stream events now.
func (s *Server) Streams() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.streams)
}

// WaitStreams waits until n connections stream events (n = 0: until every
// stream has been closed by its client).
func (s *Server) WaitStreams(n int, done <-chan struct{}) bool {
	for {
		s.mu.Lock()
		got, ch := len(s.streams), s.changed
		s.mu.Unlock()
		if got == n {
			return true
		}
		select {
		case <-ch:
		case <-done:
			return false
		}
	}
}

// Emit sends ev to every open stream.
func (s *Server) Emit(ev netctl.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.streams {
		c.Send(ev)
	}
}

// Close stops the server and closes every connection.
func (s *Server) Close() {
	s.ln.Close()
	s.mu.Lock()
	for c := range s.streams {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *Server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go s.serve(netctl.NewConn(c))
	}
}

// serve answers requests in order; a watch or session request makes the
// connection a stream until the client closes it.
func (s *Server) serve(c *netctl.Conn) {
	defer s.wg.Done()
	defer c.Close()
	for {
		var req netctl.Request
		if err := c.Recv(&req); err != nil {
			return
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, req)
		rep := s.replies[req.Op]
		if f := s.funcs[req.Op]; f != nil {
			rep = f(req)
		}
		err := c.Send(rep)
		stream := err == nil && rep.Error == "" && (req.Op == netctl.OpWatch || req.Op == netctl.OpSession)
		if stream {
			s.streams[c] = req
		}
		s.notify()
		s.mu.Unlock()
		if err != nil {
			return
		}
		if stream {
			// The client sends nothing more: a read ends when it closes.
			var v any
			for c.Recv(&v) == nil {
			}
			s.mu.Lock()
			delete(s.streams, c)
			s.notify()
			s.mu.Unlock()
			return
		}
	}
}
