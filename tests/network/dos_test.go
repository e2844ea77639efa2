//go:build linux

package network

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// floodConns and floodQueries are what the attacking sandbox holds open:
// together more than netns-dns's files in this test (dosNofile), far fewer
// than one unprivileged process may open.
const (
	floodConns   = 300
	floodQueries = 300
	dosNofile    = 256
)

// TestDNSExhaustion: one sandbox holding hundreds of TCP connections to
// netns-dns and hundreds of queries whose upstream never answers (names
// under an allowed wildcard whose server is slow or the attacker's) must
// not take DNS from the other sandboxes. netns-dns serves every namespace:
// without a limit per namespace, each connection and each pending upstream
// query holds a file, and once its files run out every sandbox's query
// fails.
func TestDNSExhaustion(t *testing.T) {
	w := newPolicyWorldLimit(t, allowlistConf, 0, dosNofile)
	if err := os.WriteFile(filepath.Join(w.presetDir, "web"), []byte("allowed.test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, b := testutil.UniqueName("da", 9), testutil.UniqueName("db", 9)
	w.up(a)
	w.up(b)
	w.mustResolve(a, "allowed.test") // netns-dns knows both
	w.mustResolve(b, "allowed.test")

	// The attack, from a: TCP connections that send nothing, then queries
	// that hang upstream.
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	err := inNetns(a, func() error {
		for i := 0; i < floodConns; i++ {
			c, err := net.DialTimeout("tcp4", gateway+":53", 5*time.Second)
			if err != nil {
				return fmt.Errorf("connection %d: %w", i, err)
			}
			conns = append(conns, c)
		}
		c, err := net.Dial("udp4", gateway+":53")
		if err != nil {
			return err
		}
		conns = append(conns, c)
		for i := 0; i < floodQueries; i++ {
			q := new(dns.Msg)
			q.SetQuestion(fmt.Sprintf("q%d.hang.wild.test.", i), dns.TypeA)
			b, _ := q.Pack()
			if _, err := c.Write(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("flood from %s: %v", a, err)
	}
	// Wait until netns-dns has forwarded what it will of the flood (the
	// upstream holds each query for netns-dns's timeout of 3 s).
	deadline := time.Now().Add(2 * time.Second)
	for strings.Count(w.auth.names(), ".hang.wild.test.") < 32 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}

	// b still resolves, over UDP and TCP.
	if rcode, addrs := w.resolve(b, "allowed.test"); rcode != "NOERROR" || strings.Join(addrs, " ") != allowedIP {
		t.Errorf("UDP query of the other sandbox during the flood: %s %v, want NOERROR %s", rcode, addrs, allowedIP)
	}
	var resp *dns.Msg
	err = inNetns(b, func() (err error) {
		q := new(dns.Msg)
		q.SetQuestion("allowed.test.", dns.TypeA)
		resp, _, err = (&dns.Client{Net: "tcp", Timeout: 5 * time.Second}).Exchange(q, gateway+":53")
		return err
	})
	if err != nil || resp.Rcode != dns.RcodeSuccess {
		t.Errorf("TCP query of the other sandbox during the flood: %v %v, want NOERROR", resp, err)
	}
	if n := strings.Count(w.auth.names(), ".hang.wild.test."); n > maxInflightSeen {
		t.Errorf("netns-dns forwarded %d queries of one sandbox at once, want at most %d", n, maxInflightSeen)
	}
}

// maxInflightSeen is netns-dns's limit of pending upstream queries of one
// namespace (maxInflight in applets/netns-dns).
const maxInflightSeen = 64
