package netnsdns

import (
	"fmt"
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
