package netnsdns

import (
	"slices"
	"sync"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/netctl"
)

// eventBuffer is how many events a stream may be behind; past it, events
// are left out for that stream (a client that does not read must not hold
// netns-dns's memory).
const eventBuffer = 256

// subscriber is one watch or session connection.
type subscriber struct {
	uid  uint32
	gids []uint32
	// nss are the namespaces it streams; all, for a watch without a
	// namespace: every namespace uid owns.
	nss     []string
	all     bool
	session bool
	// asks: it counts as an owner who can be asked: a watch, or a session
	// that can show a notification (Request.Asks); root only where it
	// named the namespace.
	asks   bool
	events chan netctl.Event
}

// hub passes events to the streams and counts who can be asked.
type hub struct {
	mu   sync.Mutex
	subs map[*subscriber]bool
	// owns reports whether uid, a member of gids, owns namespace ns (set
	// by the resolver).
	owns func(uid uint32, gids []uint32, ns string) bool
}

func (h *hub) add(s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs == nil {
		h.subs = map[*subscriber]bool{}
	}
	h.subs[s] = true
}

// remove ends s; it reports whether s was the last session of a namespace
// it streams, and which.
func (h *hub) remove(s *subscriber) (ended []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, s)
	if !s.session {
		return nil
	}
	for _, ns := range s.nss {
		if h.sessionsLocked(ns) == 0 {
			ended = append(ended, ns)
		}
	}
	return ended
}

// sessions is how many session connections of ns are open.
func (h *hub) sessions(ns string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessionsLocked(ns)
}

func (h *hub) sessionsLocked(ns string) int {
	n := 0
	for s := range h.subs {
		if s.session && slices.Contains(s.nss, ns) {
			n++
		}
	}
	return n
}

// askable reports whether an owner of ns can answer: a watch, or a
// session that can show a notification, that streams ns by name, or a
// watch of every namespace by one of its owners (a session that cannot
// show one does not count: its queries would wait for nobody) (root's watch of everything does not count: it would
// hold every namespace's queries).
func (h *hub) askable(ns string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		if !s.asks {
			continue
		}
		if slices.Contains(s.nss, ns) {
			return true
		}
		if s.all && s.uid != 0 && h.owns != nil && h.owns(s.uid, s.gids, ns) {
			return true
		}
	}
	return false
}

// publish sends e to the streams of its namespace.
func (h *hub) publish(e netctl.Event) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		if !slices.Contains(s.nss, e.Namespace) && !(s.all && h.owns != nil && h.owns(s.uid, s.gids, e.Namespace)) {
			continue
		}
		select {
		case s.events <- e:
		default: // behind: left out
		}
	}
}
