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

// maxLogSize is the size at which a namespace's denial log is moved to
// NAME.log.1 (replacing the previous one): at most twice this per
// namespace, however much a sandbox tries to fill the disk.
const maxLogSize = 1 << 20

// DenialLog appends one line per denial to DIR/NAME.log:
//
//	2026-12-01T14:30:00Z refused A x.example.com: allow with: domain x.example.com
//	2026-12-01T14:30:01Z dropped tcp 203.0.113.9 port 443: allow with: allow 203.0.113.9 tcp 443
type DenialLog struct {
	Dir string
	now func() time.Time
	mu  sync.Mutex
	// budget of each namespace (see logBurst).
	budget map[string]*logBudget
}

type logBudget struct {
	tokens  float64
	last    time.Time
	skipped int
}

// Refused logs a refused name.
func (l *DenialLog) Refused(ns string, q dns.Question) {
	name := strings.TrimSuffix(q.Name, ".")
	if q.Qclass != dns.ClassINET {
		// No domain line would allow it: do not suggest one.
		l.write(ns, fmt.Sprintf("refused %s %s %s: only class IN is answered", dns.Class(q.Qclass), dns.Type(q.Qtype), name))
		return
	}
	l.write(ns, fmt.Sprintf("refused %s %s: allow with: domain %s", dns.Type(q.Qtype), name, name))
}

// Dropped logs a dropped packet.
func (l *DenialLog) Dropped(ns, proto string, dst netip.Addr, port uint16) {
	if proto == "tcp" || proto == "udp" {
		l.write(ns, fmt.Sprintf("dropped %s %s port %d: allow with: allow %s %s %d (or a domain line for the name it belongs to)", proto, dst, port, dst, proto, port))
		return
	}
	l.write(ns, fmt.Sprintf("dropped %s %s: allow with: allow %s", proto, dst, dst))
}

func (l *DenialLog) write(ns, what string) {
	if l == nil || l.Dir == "" || !nsname.Valid(ns) {
		return
	}
	now := time.Now
	if l.now != nil {
		now = l.now
	}
	t := now()
	stamp := t.UTC().Format(time.RFC3339) + " "
	line := stamp + what + "\n"
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
	if b.skipped > 0 {
		line = fmt.Sprintf("%s%d more denials not logged (at most %d a second)\n", stamp, b.skipped, logRate) + line
		b.skipped = 0
	}
	path := filepath.Join(l.Dir, ns+".log")
	if st, err := os.Stat(path); err == nil && st.Size()+int64(len(line)) > maxLogSize {
		os.Rename(path, path+".1")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return
	}
	f.WriteString(line)
	f.Close()
}

// Denials a namespace may log: logBurst at once, then logRate a second;
// more are counted and the count logged with the next line that may be.
// Without a limit, a sandbox could rotate its log away in a second of
// refused names and hide what it did before; with it, the two files hold
// at least the last half hour.
const (
	logBurst = 100
	logRate  = 10
)
