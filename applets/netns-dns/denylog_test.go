package netnsdns

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestDenialLogFlood: a sandbox that floods refused names to rotate its
// denial log cannot push out what it did before: beyond the rate limit,
// lines are counted, not written, and the count is logged.
func TestDenialLogFlood(t *testing.T) {
	dir := t.TempDir()
	now := time.Unix(0, 0)
	l := &DenialLog{Dir: dir, now: func() time.Time { return now }}
	l.Refused("agents", dns.Question{Name: "secret-data.evil.test.", Qtype: dns.TypeA, Qclass: dns.ClassINET})
	const flood = 50000 // 5 MB of lines: 5 rotations without a limit
	for i := 0; i < flood; i++ {
		l.Refused("agents", dns.Question{Name: fmt.Sprintf("noise%d.evil.test.", i), Qtype: dns.TypeA, Qclass: dns.ClassINET})
	}
	read := func() string {
		a, _ := os.ReadFile(filepath.Join(dir, "agents.log.1"))
		b, _ := os.ReadFile(filepath.Join(dir, "agents.log"))
		return string(a) + string(b)
	}
	if got := read(); !strings.Contains(got, "refused A secret-data.evil.test") {
		t.Fatalf("the first refusal was pushed out of the log by a flood of %d; log starts:\n%.300s", flood, got)
	}
	// A second later: the next line says how many were left out.
	now = now.Add(time.Second)
	l.Refused("agents", dns.Question{Name: "after.evil.test.", Qtype: dns.TypeA, Qclass: dns.ClassINET})
	got := read()
	want := fmt.Sprintf("1970-01-01T00:00:01Z %d more denials not logged (at most %d a second)\n1970-01-01T00:00:01Z refused A after.evil.test", flood+1-logBurst, logRate)
	if !strings.Contains(got, want) {
		t.Fatalf("log lacks %q; it ends:\n%s", want, got[max(0, len(got)-500):])
	}
	if n := strings.Count(got, "\n"); n != logBurst+2 {
		t.Fatalf("%d lines, want %d", n, logBurst+2)
	}
}

// TestDenialLogClassAndType: a query of another class than IN for an
// allowed name is not logged as a name to allow, and a type without a
// name shows as TYPEnnn.
func TestDenialLogClassAndType(t *testing.T) {
	r, _, _, dir := newTestResolver(t)
	q := query("api.example.com.", dns.TypeA)
	q.Question[0].Qclass = dns.ClassCHAOS
	r.Answer(t.Context(), allowSrc, q)
	r.Answer(t.Context(), allowSrc, query("evil.test.", 65280))
	b, _ := os.ReadFile(filepath.Join(dir, "agents.log"))
	for _, want := range []string{
		"refused CH A api.example.com: only class IN is answered\n",
		"refused TYPE65280 evil.test: allow with: domain evil.test\n",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("log lacks %q:\n%s", want, b)
		}
	}
}

// longestName is the longest name a query can carry, in the text form
// miekg/dns gives it (every byte a control byte, so \DDD): 1,000 bytes.
var longestName = func() string {
	l63, l61 := strings.Repeat(`\001`, 63), strings.Repeat(`\001`, 61)
	return l63 + "." + l63 + "." + l63 + "." + l61 + "."
}()

// TestDenialLogKeepsMarker: a denial logged before a flood of the longest
// lines a sandbox can make is still in the log (NAME.log.1 and NAME.log,
// what netns-setup denials prints) after 30 minutes of that flood.
func TestDenialLogKeepsMarker(t *testing.T) {
	dir := t.TempDir()
	now := time.Unix(0, 0)
	l := &DenialLog{Dir: dir, now: func() time.Time { return now }}
	l.Refused("agents", dns.Question{Name: "marker.evil.test.", Qtype: dns.TypeA, Qclass: dns.ClassINET})
	for s := 0; s < 30*60; s++ {
		for i := 0; i < 20; i++ { // twice the rate: the limit is reached every second
			now = time.Unix(int64(s), int64(i)*50e6)
			q := dns.Question{Name: longestName, Qtype: 65535, Qclass: dns.ClassINET}
			if i%2 == 1 {
				q.Qclass = 65535
			}
			l.Refused("agents", q)
		}
	}
	a, _ := os.ReadFile(filepath.Join(dir, "agents.log.1"))
	b, _ := os.ReadFile(filepath.Join(dir, "agents.log"))
	got := string(a) + string(b)
	if !strings.Contains(got, "refused A marker.evil.test: allow with: domain marker.evil.test\n") {
		t.Fatalf("the marker was pushed out by 30 minutes of flood (%d bytes kept); log starts:\n%.300s", len(got), got)
	}
	for _, line := range strings.SplitAfter(got, "\n") {
		if len(line) > maxLineLen {
			t.Fatalf("line of %d bytes, want at most %d: %.200s", len(line), maxLineLen, line)
		}
		if strings.Contains(line, `\\`) {
			t.Fatalf("name escaped twice: %.200s", line)
		}
	}
}

// TestDenialLogBudget: the budget holds at least an hour of the worst flood
// (every line as long as it can be, at the full rate), and at least 16 MiB.
func TestDenialLogBudget(t *testing.T) {
	hour := int64(logBurst+logRate*3600) * int64(maxLineLen)
	if LogBudget < hour || LogBudget < 16<<20 {
		t.Errorf("LogBudget = %d, want at least %d (an hour of the longest lines) and %d", LogBudget, hour, 16<<20)
	}
}

// TestDenialLogNames: names are cut to the DNS maximum, never inside an
// escape, and only names of host name bytes get advice, exactly their own
// name (never a wildcard).
func TestDenialLogNames(t *testing.T) {
	for _, tc := range []struct {
		name, q, want string
	}{
		{"exact advice", "x.attacker.test.", "refused A x.attacker.test: allow with: domain x.attacker.test\n"},
		{"escaped name", `a\001b.attacker.test.`, `refused A a\001b.attacker.test: no domain line can allow this name` + "\n"},
		{"longest", longestName, "refused A " + strings.Repeat(`\001`, 63) + `...: no domain line can allow this name` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l := &DenialLog{Dir: dir}
			l.Refused("agents", dns.Question{Name: tc.q, Qtype: dns.TypeA, Qclass: dns.ClassINET})
			b, _ := os.ReadFile(filepath.Join(dir, "agents.log"))
			if _, line, _ := strings.Cut(string(b), " "); line != tc.want {
				t.Errorf("Refused(%q) wrote %q, want %q", tc.q, line, tc.want)
			}
			if strings.Contains(string(b), "*.") {
				t.Errorf("advice with a wildcard: %q", b)
			}
		})
	}
}

// TestDroppedAdvice: a drop to the LAN, link-local or loopback is opened
// only by an allow line of netns-firewall.conf; an internet address also
// by a domain line.
func TestDroppedAdvice(t *testing.T) {
	for _, tc := range []struct {
		dst, proto string
		port       uint16
		want       string
	}{
		{"169.254.169.254", "tcp", 80, "dropped tcp 169.254.169.254 port 80: allow with: allow 169.254.169.254 tcp 80 (in netns-firewall.conf)\n"},
		{"192.168.77.10", "icmp", 0, "dropped icmp 192.168.77.10: allow with: allow 192.168.77.10 (in netns-firewall.conf)\n"},
		{"203.0.113.30", "udp", 443, "dropped udp 203.0.113.30 port 443: allow with: allow 203.0.113.30 udp 443 (or a domain line for the name it belongs to)\n"},
	} {
		l := &DenialLog{Dir: t.TempDir(), now: func() time.Time { return time.Unix(0, 0) }}
		l.Dropped("agents", tc.proto, netip.MustParseAddr(tc.dst), tc.port)
		b, err := os.ReadFile(filepath.Join(l.Dir, "agents.log"))
		if err != nil {
			t.Fatal(err)
		}
		if got := string(b); !strings.HasSuffix(got, " "+tc.want) {
			t.Errorf("Dropped(%s %s %d) wrote %q, want the line to end %q", tc.proto, tc.dst, tc.port, got, tc.want)
		}
	}
}
