//go:build linux

package network

import (
	"net"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/nft"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// TestFlushFailsClosed: an nft flush ruleset on the host (what a restart of
// nftables, firewalld or Docker does) while an allowlist sandbox is up gives
// it no new destination at any moment. A prober inside connects in a loop
// to the LAN, the metadata address, services of the host on its bridge,
// uplink and LAN addresses, and an address of the internet no allowed name
// resolved to, from before the flush until after netns-setup guard has
// put the tables back; nothing ever answers, and the tables come back.
func TestFlushFailsClosed(t *testing.T) {
	w := newPolicyWorld(t, "policy allowlist\ndomain allowed.test\n", 0)
	a := testutil.UniqueName("pf", 9)
	w.up(a)
	serveHTTP(t, w.lan, lanAddr+":8080", "lan")
	serveHTTP(t, w.lan, metadata+":80", "metadata")
	serveHTTP(t, w.host, "0.0.0.0:8082", "host any")
	targets := []string{lanAddr + ":8080", metadata + ":80", gateway + ":8082", inetHost + ":8082", lanHost + ":8082", evilIP + ":80"}
	if got := w.mustResolve(a, "allowed.test"); strings.Join(got, " ") != allowedIP {
		t.Fatalf("allowed.test = %v, want %s", got, allowedIP)
	}

	guard := w.setupCmd("guard", a)
	var guardErr strings.Builder
	guard.Stderr = &guardErr
	if err := guard.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		guard.Process.Signal(syscall.SIGTERM)
		guard.Wait()
	})

	var mu sync.Mutex
	reached := map[string]bool{}
	rounds := 0
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, addr := range targets {
				inNetns(a, func() error {
					c, err := net.DialTimeout("tcp4", addr, 200*time.Millisecond)
					if err == nil {
						c.Close()
						mu.Lock()
						reached[addr] = true
						mu.Unlock()
					}
					return nil
				})
			}
			mu.Lock()
			rounds++
			mu.Unlock()
		}
	}()
	waitRounds := func(n int) {
		for {
			mu.Lock()
			r := rounds
			mu.Unlock()
			if r >= n {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitRounds(2)
	testutil.InNetns(t, w.host, "nft", "flush", "ruleset")
	mu.Lock()
	flushed := rounds
	mu.Unlock()

	back := func() bool {
		for _, table := range []string{nft.TableName, nft.NamespaceTable(a)} {
			if exec.Command("ip", "netns", "exec", w.host, "nft", "list", "table", "inet", table).Run() != nil {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(10 * time.Second)
	for !back() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	restored := back()
	// Probe on after the restore too: the tables come back one at a time.
	mu.Lock()
	after := rounds
	mu.Unlock()
	waitRounds(after + 3)
	close(stop)
	<-done

	mu.Lock()
	defer mu.Unlock()
	if rounds <= flushed {
		t.Fatalf("the prober made no round after the flush")
	}
	if len(reached) > 0 {
		t.Errorf("after nft flush ruleset the sandbox reached %v", reached)
	}
	if !restored {
		t.Fatalf("the tables did not come back after nft flush ruleset; guard said:\n%s", guardErr.String())
	}
	if got := guardErr.String(); !strings.Contains(got, "netns-setup: firewall of "+a+" was missing (table inet "+nft.TableName+"): restored it\n") {
		t.Errorf("guard said:\n%s\nwant it to log that it restored the firewall of %s", guardErr.String(), a)
	}
}
