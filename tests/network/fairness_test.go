//go:build linux

package network

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// floodWorkers is how many sockets the flooding sandbox sends from, each
// as fast as it can.
const floodWorkers = 4

// floodRefused floods netns-dns from sandbox ns with queries for refused
// names (a new name each, as an exfiltration would) until the returned
// func is called; that func returns how many were sent.
func floodRefused(t *testing.T, ns string) (stop func() int64) {
	t.Helper()
	var conns []net.Conn
	err := inNetns(ns, func() error {
		for range floodWorkers {
			c, err := net.Dial("udp4", gateway+":53")
			if err != nil {
				return err
			}
			conns = append(conns, c)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("flood from %s: %v", ns, err)
	}
	var sent atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			q := new(dns.Msg)
			for n := 0; ; n++ {
				select {
				case <-done:
					return
				default:
				}
				q.SetQuestion(fmt.Sprintf("x%d-%d.flood.attacker.test.", i, n), dns.TypeTXT)
				b, _ := q.Pack()
				if _, err := c.Write(b); err == nil {
					sent.Add(1)
				}
			}
		})
	}
	var once sync.Once
	stop = func() int64 {
		once.Do(func() {
			close(done)
			wg.Wait()
			for _, c := range conns {
				c.Close()
			}
		})
		return sent.Load()
	}
	t.Cleanup(func() { stop() })
	return stop
}

// askAllowed sends n queries for allowed.test from sandbox ns, one after
// the other on one socket, each waiting up to wait for its answer; it
// returns each answer's latency (wait for a lost one) and stops early after
// maxLost lost ones.
func askAllowed(t *testing.T, ns string, n, maxLost int, wait time.Duration) (lat []time.Duration, lost int) {
	t.Helper()
	err := inNetns(ns, func() error {
		conn, err := net.Dial("udp4", gateway+":53")
		if err != nil {
			return err
		}
		defer conn.Close()
		c := &dns.Conn{Conn: conn}
		for i := range n {
			q := new(dns.Msg)
			q.SetQuestion("allowed.test.", dns.TypeA)
			q.Id = uint16(i)
			start := time.Now()
			if err := c.WriteMsg(q); err != nil {
				return err
			}
			conn.SetReadDeadline(start.Add(wait))
			for {
				r, err := c.ReadMsg()
				if err != nil {
					lat = append(lat, wait)
					lost++
					break
				}
				if r.Id == q.Id { // a late answer to a lost query is not this one's
					lat = append(lat, time.Since(start))
					break
				}
			}
			if lost >= maxLost {
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("queries from %s: %v", ns, err)
	}
	return lat, lost
}

// TestDNSFairness: one sandbox flooding netns-dns with refused names at
// full speed must not cost another sandbox a single answer. With one
// socket for every namespace, the flood filled the shared receive buffer
// and the other sandbox's queries were dropped with it.
func TestDNSFairness(t *testing.T) {
	w := newPolicyWorld(t, allowlistConf, 0)
	if err := os.WriteFile(filepath.Join(w.presetDir, "web"), []byte("allowed.test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, b := testutil.UniqueName("fa", 9), testutil.UniqueName("fb", 9)
	w.up(a)
	w.up(b)
	w.mustResolve(a, "allowed.test")
	w.mustResolve(b, "allowed.test")

	stop := floodRefused(t, a)
	time.Sleep(500 * time.Millisecond) // the flood fills what it can
	// A lost UDP query is never answered: 5 s is a loss, not a slow answer.
	_, lost := askAllowed(t, b, 300, 3, 5*time.Second)
	sent := stop()
	if lost > 0 {
		t.Errorf("%d queries of %s lost while %s flooded %d refused names", lost, b, a, sent)
	}
	if got := w.denials(a); !strings.Contains(got, "flood.attacker.test") {
		t.Errorf("the flood is not in the denial log of %s:\n%.500s", a, got)
	}
}

// TestFairnessBench prints, for make bench-network, how another
// sandbox's allowed queries fare while one sandbox floods netns-dns with
// refused names at full speed: the share answered within 1 s (target >=
// 99.9%), their latency, and netns-dns's largest RSS meanwhile (target <
// 64 MiB). It asserts nothing about time.
func TestFairnessBench(t *testing.T) {
	// Selected by scripts/bench-network (CLAUDE_SBX_E2E=bench-dns).
	testutil.E2E(t, testutil.E2EBenchDNS)
	w := newPolicyWorld(t, allowlistConf, 0)
	if err := os.WriteFile(filepath.Join(w.presetDir, "web"), []byte("allowed.test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, b := testutil.UniqueName("fa", 9), testutil.UniqueName("fb", 9)
	w.up(a)
	w.up(b)
	w.mustResolve(a, "allowed.test")
	w.mustResolve(b, "allowed.test")

	var maxRSS atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			if kib := vmRSS(w.dnsPid); kib > maxRSS.Load() {
				maxRSS.Store(kib)
			}
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	stop := floodRefused(t, a)
	start := time.Now()
	time.Sleep(time.Second)
	const n = 5000
	lat, _ := askAllowed(t, b, n, n, time.Second)
	sent := stop()
	elapsed := time.Since(start)
	close(done)
	wg.Wait()

	within := 0
	for _, d := range lat {
		if d < time.Second {
			within++
		}
	}
	slices.Sort(lat)
	fmt.Printf("fairness: %d refused names a second from one namespace (%d in %v); another's %d queries: %.2f%% answered within 1 s (target >= 99.9%%), latency median %v, p99 %v, max %v\n",
		int64(float64(sent)/elapsed.Seconds()), sent, elapsed.Round(time.Millisecond), len(lat), 100*float64(within)/float64(len(lat)),
		lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1])
	fmt.Printf("fairness: netns-dns RSS at most %.1f MiB during the flood (target < 64)\n", float64(maxRSS.Load())/1024)
}

// vmRSS is the resident memory of pid in KiB, 0 if unknown.
func vmRSS(pid int) int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			var kib int64
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kib)
			return kib
		}
	}
	return 0
}
