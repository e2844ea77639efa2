package netnsdns

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/claude-sandbox/claude-sandbox/internal/nsname"
)

// DenialLog appends one line per denial to DIR/NAME.log:
//
//	2026-12-01T14:30:00Z refused A x.example.com: allow with: domain x.example.com
//	2026-12-01T14:30:01Z dropped tcp 203.0.113.9 port 443: allow with: allow 203.0.113.9 tcp 443
//
// What it keeps is stated in bytes: a namespace's log moves to NAME.log.1
// (replacing the one before) when it would grow past LogBudget, so the two
// files hold at least the last LogBudget bytes of denials and at most twice
// that. Lines are bounded (maxLineLen) and rate limited (logRate), so
// LogBudget holds at least the last hour of the worst flood a sandbox can
// send (TestDenialLogBudget checks the arithmetic).
type DenialLog struct {
	Dir string
	// Budget is LogBudget when zero (tests shorten it).
	Budget int64
	// OnDrop, if set, also gets each drop (the recent refusals of
	// netns-dns's control socket).
	OnDrop func(ns, proto string, dst netip.Addr, port uint16)
	now    func() time.Time
	mu     sync.Mutex
	// budget of each namespace (see logBurst).
	budget map[string]*logBudget
}

type logBudget struct {
	tokens  float64
	last    time.Time
	skipped int
}

// LogBudget is the size at which a namespace's denial log is rotated: 24
// MiB, more than an hour of the longest lines at the highest rate.
const LogBudget = 24 << 20

// Denials a namespace may log: logBurst at once, then logRate a second;
// more are counted and the count logged with the next line that may be.
// Without a limit, a sandbox could rotate its log away in a second of
// refused names and hide what it did before.
const (
	logBurst = 100
	logRate  = 10
)

// maxNameLen is the longest name a line holds: the longest name DNS has in
// text form. A longer one (bytes escaped as \DDD take four) is cut there,
// and marks the cut with "...".
const maxNameLen = 253

// maxLineLen bounds what one denial writes: its line (the time stamp,
// "refused CLASS65535 TYPE65535 ", a name, and the advice with the name
// again: only names made of host name bytes, at most maxNameLen long, get
// one) and the count of the denials left out before it.
const maxLineLen = 21 + len("refused CLASS65535 TYPE65535 ") + maxNameLen + len("...") + len(": allow with: domain ") + maxNameLen + 1 +
	21 + len("18446744073709551615 more denials not logged (at most 10 a second)\n")

// Refused logs a refused name. The name is written once escaped, as DNS
// writes names in text (\DDD for a byte that is not printable, a
// backslash before . and \ inside a label); only a name of host name bytes
// gets advice, which names it exactly.
func (l *DenialLog) Refused(ns string, q dns.Question) {
	l.write(ns, func() string {
		name := strings.TrimSuffix(q.Name, ".")
		shown := logName(name)
		if q.Qclass != dns.ClassINET {
			// No domain line would allow it: do not suggest one.
			return fmt.Sprintf("refused %s %s %s: only class IN is answered", dns.Class(q.Qclass), dns.Type(q.Qtype), shown)
		}
		if shown != name || !hostName(strings.ToLower(name)) {
			return fmt.Sprintf("refused %s %s: no domain line can allow this name", dns.Type(q.Qtype), shown)
		}
		return fmt.Sprintf("refused %s %s: allow with: domain %s", dns.Type(q.Qtype), name, name)
	})
}

// Dropped logs a dropped packet.
func (l *DenialLog) Dropped(ns, proto string, dst netip.Addr, port uint16) {
	if l.OnDrop != nil {
		l.OnDrop(ns, proto, dst, port)
	}
	l.write(ns, func() string {
		if proto == "tcp" || proto == "udp" {
			return fmt.Sprintf("dropped %s %s port %d: allow with: allow %s %s %d (or a domain line for the name it belongs to)", proto, dst, port, dst, proto, port)
		}
		return fmt.Sprintf("dropped %s %s: allow with: allow %s", proto, dst, dst)
	})
}

// Removed logs an address removed from the answer to name: one the
// sandbox must not reach through a name (loopback, link-local, private
// ranges, the bridge, the host's own), which a DNS server could otherwise
// hand it (DNS rebinding).
func (l *DenialLog) Removed(ns, name string, addr netip.Addr) {
	l.write(ns, func() string {
		name = strings.TrimSuffix(name, ".")
		return fmt.Sprintf("removed %s from the answer to %s (a local or private address): allow with: allow %s", addr, logName(name), addr)
	})
}

// logName is name cut to maxNameLen bytes, never inside an escape.
func logName(name string) string {
	if len(name) <= maxNameLen {
		return name
	}
	cut := 0
	for i := 0; i < len(name); {
		n := 1
		if name[i] == '\\' {
			n = 2
			if i+1 < len(name) && name[i+1] >= '0' && name[i+1] <= '9' {
				n = 4
			}
		}
		if i+n > maxNameLen {
			break
		}
		i += n
		cut = i
	}
	return strings.TrimSuffix(name[:cut], ".") + "..."
}

// write appends the line what() makes; what runs only when the line is
// within the namespace's rate, so that a flood costs no formatting.
func (l *DenialLog) write(ns string, what func() string) {
	if l == nil || l.Dir == "" || !nsname.Valid(ns) {
		return
	}
	now := time.Now
	if l.now != nil {
		now = l.now
	}
	t := now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.budget == nil {
		l.budget = map[string]*logBudget{}
	}
	b := l.budget[ns]
	if b == nil {
		b = &logBudget{tokens: logBurst, last: t}
		l.budget[ns] = b
	}
	if d := t.Sub(b.last); d > 0 {
		b.tokens = min(logBurst, b.tokens+d.Seconds()*logRate)
		b.last = t
	}
	if b.tokens < 1 {
		b.skipped++
		return
	}
	b.tokens--
	stamp := t.UTC().Format(time.RFC3339) + " "
	line := stamp + what() + "\n"
	if b.skipped > 0 {
		line = fmt.Sprintf("%s%d more denials not logged (at most %d a second)\n", stamp, b.skipped, logRate) + line
		b.skipped = 0
	}
	budget := l.Budget
	if budget <= 0 {
		budget = LogBudget
	}
	path := filepath.Join(l.Dir, ns+".log")
	if st, err := os.Stat(path); err == nil && st.Size()+int64(len(line)) > budget {
		os.Rename(path, path+".1")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return
	}
	f.WriteString(line)
	f.Close()
}
