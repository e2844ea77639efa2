package netnsdns

import (
	"slices"
	"sync"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/netctl"
)

// maxRecent bounds the distinct refused names (and drops) kept per namespace for
// denials; the oldest go first.
const maxRecent = 1000

// maxRecentTimes bounds the times kept per name: Denial.Count counts at
// most that many.
const maxRecentTimes = 100

type recentKey struct{ name, typ, drop string }

type recentEntry struct {
	key   recentKey
	times []time.Time
}

// recent are the refusals of every namespace, in memory, for denials.
type recent struct {
	mu  sync.Mutex
	byN map[string][]*recentEntry // oldest last refusal first
}

// add records a refusal of name (escaped, as the log writes it) with
// query type typ in ns.
func (r *recent) add(ns, name, typ string, now time.Time) {
	r.addKey(ns, recentKey{name: name, typ: typ}, now)
}

// addDrop records a connection the firewall dropped: "tcp 203.0.113.7:22".
func (r *recent) addDrop(ns, drop string, now time.Time) {
	r.addKey(ns, recentKey{drop: drop}, now)
}

func (r *recent) addKey(ns string, k recentKey, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byN == nil {
		r.byN = map[string][]*recentEntry{}
	}
	list := r.byN[ns]
	i := slices.IndexFunc(list, func(e *recentEntry) bool { return e.key == k })
	var e *recentEntry
	if i >= 0 {
		e = list[i]
		list = slices.Delete(list, i, i+1)
	} else {
		e = &recentEntry{key: k}
		if len(list) >= maxRecent {
			list = list[1:]
		}
	}
	e.times = append(e.times, now)
	if len(e.times) > maxRecentTimes {
		e.times = e.times[len(e.times)-maxRecentTimes:]
	}
	r.byN[ns] = append(list, e)
}

// since returns the refusals of ns at or after t, newest last.
func (r *recent) since(ns string, t time.Time) []netctl.Denial {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []netctl.Denial
	for _, e := range r.byN[ns] {
		n := 0
		for _, at := range e.times {
			if !at.Before(t) {
				n++
			}
		}
		if n == 0 {
			continue
		}
		out = append(out, netctl.Denial{Time: e.times[len(e.times)-1], Namespace: ns, Name: e.key.name, Type: e.key.typ, Drop: e.key.drop, Count: n})
	}
	return out
}
