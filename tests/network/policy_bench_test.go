//go:build linux

package network

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// TestPolicyBench prints three ratios of the policy resolver:
//   - DNS latency (median of 300) of a query through netns-dns from an
//     allowlist namespace, against the same query sent from the host to
//     the upstream directly;
//   - time to first byte of an HTTP request to an allowed name's server
//     from an allowlist namespace against an open one;
//   - netns-dns's resident memory after it pinned 10,000 addresses.
func TestPolicyBench(t *testing.T) {
	// It measures and prints, and asserts nothing about time: selected
	// by scripts/bench-dns (CLAUDE_SBX_E2E=bench-dns).
	testutil.E2E(t, testutil.E2EBenchDNS)
	w := newPolicyWorld(t, "policy allowlist\ndomain allowed.test\ndomain *.bulk.test\n", 0)
	a, o := testutil.UniqueName("ba", 9), testutil.UniqueName("bo", 9)
	w.writeNsConf(o, "policy open\n")
	w.up(a)
	w.up(o)
	w.mustResolve(a, "allowed.test")
	w.mustResolve(o, "allowed.test")

	const n = 300
	for _, delay := range []time.Duration{0, 2 * time.Millisecond} {
		w.auth.mu.Lock()
		w.auth.delay = delay
		w.auth.mu.Unlock()
		var viaResolver, direct []time.Duration
		for range n / 20 { // interleaved, against drift on a shared machine
			viaResolver = append(viaResolver, timeQueries(t, a, gateway+":53", 20)...)
			direct = append(direct, timeQueries(t, w.host, inetAddr+":53", 20)...)
		}
		v, d := median(viaResolver), median(direct)
		fmt.Printf("dns: upstream answering in %v: via netns-dns %v, upstream directly %v (medians of %d); ratio %.2f (target <= 1.2)\n",
			delay, v, d, n, float64(v)/float64(d))
	}
	w.auth.delay = 0

	var allowTimes, openTimes []time.Duration
	for range n / 20 {
		allowTimes = append(allowTimes, timeTTFB(t, a, allowedIP+":80", 20)...)
		openTimes = append(openTimes, timeTTFB(t, o, allowedIP+":80", 20)...)
	}
	allow, open := median(allowTimes), median(openTimes)
	fmt.Printf("ttfb: allowlist %v, open %v (medians of %d); ratio %.3f (target <= 1.05)\n",
		allow, open, n, float64(allow)/float64(open))

	before := rssKiB(t, w.dnsPid)
	err := inNetns(a, func() error {
		c := &dns.Client{Timeout: 5 * time.Second}
		for i := range 10000 {
			q := new(dns.Msg)
			q.SetQuestion(fmt.Sprintf("n%d-%d.bulk.test.", i/10000+1, i), dns.TypeA)
			r, _, err := c.Exchange(q, gateway+":53")
			if err != nil || len(r.Answer) != 1 {
				return fmt.Errorf("bulk query %d: %v %v", i, r, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	set := testutil.InNetns(t, w.host, "nft", "list", "set", "inet", "claude_sandbox_ns_"+a, "pin1")
	pinned := strings.Count(set, "45.1.")
	after := rssKiB(t, w.dnsPid)
	fmt.Printf("rss: netns-dns %.1f MiB with %d addresses pinned (%.1f MiB before) (target <= 30)\n",
		float64(after)/1024, pinned, float64(before)/1024)
}

func timeQueries(t *testing.T, ns, server string, n int) []time.Duration {
	t.Helper()
	var ds []time.Duration
	err := inNetns(ns, func() error {
		conn, err := net.Dial("udp4", server)
		if err != nil {
			return err
		}
		defer conn.Close()
		c := &dns.Conn{Conn: conn}
		for i := range n + 5 {
			q := new(dns.Msg)
			q.SetQuestion("allowed.test.", dns.TypeA)
			start := time.Now()
			if err := c.WriteMsg(q); err != nil {
				return err
			}
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.ReadMsg(); err != nil {
				return err
			}
			if i >= 5 { // warm-up
				ds = append(ds, time.Since(start))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func timeTTFB(t *testing.T, ns, addr string, n int) []time.Duration {
	t.Helper()
	var ds []time.Duration
	err := inNetns(ns, func() error {
		buf := make([]byte, 1)
		for range n {
			start := time.Now()
			c, err := net.Dial("tcp4", addr)
			if err != nil {
				return err
			}
			fmt.Fprintf(c, "GET / HTTP/1.0\r\n\r\n")
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err = c.Read(buf)
			ds = append(ds, time.Since(start))
			c.Close()
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func rssKiB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			var kib int
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kib)
			return kib
		}
	}
	t.Fatal("no VmRSS")
	return 0
}
