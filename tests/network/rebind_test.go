//go:build linux

package network

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// TestRebinding: an allowed name whose server answers with loopback, the
// metadata address, the bridge and a LAN address (DNS rebinding) resolves
// to its public address only; the others are neither returned nor pinned,
// and each is in the denial log. A TTL of 2^32-1 is capped by the
// config's max-ttl line (2 hours here; a day without one).
func TestRebinding(t *testing.T) {
	w := newPolicyWorld(t, allowlistConf+"domain rebind.test tcp 80\nmax-ttl 2h\n", 0)
	if err := os.WriteFile(filepath.Join(w.presetDir, "web"), []byte("allowed.test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := testutil.UniqueName("ra", 9)
	w.up(a)
	q := new(dns.Msg)
	q.SetQuestion("rebind.test.", dns.TypeA)
	var resp *dns.Msg
	err := inNetns(a, func() (err error) {
		resp, _, err = (&dns.Client{Timeout: 5 * time.Second}).Exchange(q, gateway+":53")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rr := range resp.Answer {
		got = append(got, rr.(*dns.A).A.String())
		if rr.Header().Ttl > 7200 {
			t.Errorf("answer TTL %d, want at most 7200 (max-ttl 2h)", rr.Header().Ttl)
		}
	}
	if strings.Join(got, " ") != allowedIP {
		t.Errorf("rebind.test = %v, want %s alone", got, allowedIP)
	}
	set := testutil.InNetns(t, w.host, "nft", "list", "table", "inet", "claude_sandbox_ns_"+a)
	for _, local := range []string{"127.0.0.1", metadata, gateway, lanAddr} {
		if strings.Contains(set, local+" ") || strings.Contains(set, local+",") {
			t.Errorf("%s pinned:\n%s", local, set)
		}
		want := "removed " + local + " from the answer to rebind.test"
		if log := w.waitDenial(a, want); !strings.Contains(log, want) {
			t.Errorf("denials lacks %q:\n%s", want, log)
		}
	}
	// 2 hours and an eighth: nft prints it as 2h15m.
	for _, m := range regexp.MustCompile(`(?:timeout|expires) (\d+)([dh])`).FindAllStringSubmatch(set, -1) {
		if n, _ := strconv.Atoi(m[1]); m[2] == "d" || n > 2 {
			t.Errorf("a pin of %s%s:\n%s", m[1], m[2], set)
		}
	}
}
