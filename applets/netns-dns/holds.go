package netnsdns

import (
	"net/netip"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// DefaultHold is how long a query is held while its namespace's owners are
// asked, where the policy does not say (hold). It fits inside what the
// stub resolvers measured in docs/network.md wait before giving up, with
// a second to spare: musl gives up after 5 s (it sends again, same id and
// port, at 2.5 s), glibc (and Node's dns.lookup) and Go's resolver after
// 10 s (5 s a try), c-ares (Node's dns.resolve) after 30 s (new port,
// same id, at 2.9 s). A retransmission joins the hold and gets the answer.
const DefaultHold = 4 * time.Second

// maxHeld bounds the held queries of one namespace; past it, queries are
// refused as without a hold. A held query costs a parked message and a
// closure, no goroutine.
const maxHeld = 4096

// maxHeldPerName bounds the held queries of one name in one namespace, so
// that one name's flood cannot fill the namespace's maxHeld (and get the
// user's own lookups refused at once).
const maxHeldPerName = 64

// waiter is one held query: answered by release (nil: never answered, the
// client gave up or was replaced by its retransmission).
type waiter struct {
	src     netip.Addr
	q       *dns.Msg
	release func(*dns.Msg)
}

// hold is every held query of one name in one namespace.
type hold struct {
	ns, name string
	qtype    uint16
	start    time.Time
	until    time.Time
	waiters  []waiter
}

type holdKey struct{ ns, name string }

// holds are the held queries of every namespace.
type holds struct {
	mu    sync.Mutex
	byKey map[holdKey]*hold
	count map[string]int // held waiters per namespace
	// ended: until when a name whose hold ran out unanswered is not held
	// again (as long as its hold was): the stub's retry of a query that
	// was just refused is refused at once, one hold per lookup.
	ended map[holdKey]time.Time
}

// add holds q of name in ns until until, joined to the hold of the same
// name: a retransmission (same id and type) replaces its earlier copy. It
// returns false when ns holds maxHeld already, the name maxHeldPerName,
// or the name's hold has just run out, and whether the hold is new.
func (h *holds) add(ns, name string, w waiter, now, until time.Time) (ok, isNew bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byKey == nil {
		h.byKey, h.count, h.ended = map[holdKey]*hold{}, map[string]int{}, map[holdKey]time.Time{}
	}
	k := holdKey{ns, name}
	if t, ok := h.ended[k]; ok && now.Before(t) {
		return false, false
	}
	hd := h.byKey[k]
	if hd != nil {
		for i, old := range hd.waiters {
			if old.q.Id == w.q.Id && old.q.Question[0].Qtype == w.q.Question[0].Qtype {
				hd.waiters[i] = w
				go old.release(nil)
				return true, false
			}
		}
	}
	if h.count[ns] >= maxHeld || hd != nil && len(hd.waiters) >= maxHeldPerName {
		return false, false
	}
	if hd == nil {
		hd = &hold{ns: ns, name: name, qtype: w.q.Question[0].Qtype, start: now, until: until}
		h.byKey[k] = hd
		isNew = true
	}
	hd.waiters = append(hd.waiters, w)
	h.count[ns]++
	return true, isNew
}

// take removes and returns the holds of ns whose name match covers.
func (h *holds) take(ns string, match func(name string) bool) []*hold {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*hold
	for k, hd := range h.byKey {
		if k.ns == ns && match(k.name) {
			out = append(out, hd)
			h.drop(k, hd)
		}
	}
	return out
}

// takeSince removes and returns the holds of ns that began at or after
// since.
func (h *holds) takeSince(ns string, since time.Time) []*hold {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*hold
	for k, hd := range h.byKey {
		if k.ns == ns && !hd.start.Before(since) {
			out = append(out, hd)
			h.drop(k, hd)
		}
	}
	return out
}

// expired removes and returns the holds that end at now; their names are
// not held again for as long as they were held.
func (h *holds) expired(now time.Time) []*hold {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, t := range h.ended {
		if !now.Before(t) {
			delete(h.ended, k)
		}
	}
	var out []*hold
	for k, hd := range h.byKey {
		if !now.Before(hd.until) {
			out = append(out, hd)
			h.drop(k, hd)
			h.ended[k] = now.Add(hd.until.Sub(hd.start))
		}
	}
	return out
}

// held is how many queries ns holds.
func (h *holds) held(ns string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.count[ns]
}

func (h *holds) drop(k holdKey, hd *hold) {
	delete(h.byKey, k)
	if h.count[k.ns] -= len(hd.waiters); h.count[k.ns] <= 0 {
		delete(h.count, k.ns)
	}
}
