//go:build linux

package network

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/netctl"
	"github.com/claude-sandbox/claude-sandbox/internal/netpolicy"
	"github.com/claude-sandbox/claude-sandbox/internal/nft"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// TestAllowlistWithoutHostTables: with every table of the host gone (nft
// flush ruleset, and no guard to put them back) an allowlist namespace
// still reaches only the addresses its allowed names resolved to: the
// table inside it holds the pin sets too. The internet here routes the
// sandboxes' range back to the host (as a LAN that knows the host's
// routes would), so an address that leaves the namespace answers.
func TestAllowlistWithoutHostTables(t *testing.T) {
	w := newPolicyWorld(t, "policy allowlist\ndomain allowed.test tcp 80\n", 0)
	a := testutil.UniqueName("ia", 9)
	w.up(a)
	w.setForward("1")
	ip(t, "-n", w.inet, "route", "add", "10.10.0.0/16", "via", inetHost)
	if got := w.mustResolve(a, "allowed.test"); strings.Join(got, " ") != allowedIP {
		t.Fatalf("allowed.test = %v, want %s", got, allowedIP)
	}
	inside := testutil.InNetns(t, a, "nft", "list", "table", "inet", nft.InsideTable)
	if !strings.Contains(inside, allowedIP) {
		t.Errorf("the table inside %s does not hold the pinned %s:\n%s", a, allowedIP, inside)
	}
	testutil.InNetns(t, w.host, "nft", "flush", "ruleset")

	if got := dial(t, a, "tcp4", allowedIP+":80"); got != "ok" {
		t.Errorf("pinned %s:80 after the flush: %s, want ok", allowedIP, got)
	}
	if got := dial(t, a, "tcp4", evilIP+":80"); got != "no route to host" {
		t.Errorf("unpinned %s:80 after the flush: %s, want no route to host", evilIP, got)
	}
	if got := dial(t, a, "tcp4", allowedIP+":853"); got != "no route to host" {
		t.Errorf("pinned %s on an unallowed port 853 after the flush: %s, want no route to host", allowedIP, got)
	}
	if got := dial(t, a, "udp4", allowedIP+":443"); got != "no route to host" {
		t.Errorf("UDP 443 to %s after the flush: %s, want no route to host", allowedIP, got)
	}
	select {
	case got := <-w.udpSeen:
		t.Errorf("UDP reached the internet after the flush: %q", got)
	default:
	}
	want := "dropped tcp " + evilIP + " port 80"
	if log := w.waitDenial(a, want); !strings.Contains(log, want) {
		t.Errorf("denials lacks %q:\n%s", want, log)
	}

	// The up of another namespace puts back the bridge's table (and its
	// masquerade) but not the first one's own table: the table inside
	// still holds the allowlist.
	w.up(testutil.UniqueName("ib", 9))
	if got := dial(t, a, "tcp4", evilIP+":80"); got != "no route to host" {
		t.Errorf("unpinned %s:80 after the up of another namespace: %s, want no route to host", evilIP, got)
	}
	if got := dial(t, a, "tcp4", allowedIP+":80"); got != "ok" {
		t.Errorf("pinned %s:80 after the up of another namespace: %s, want ok", allowedIP, got)
	}
}

// TestPinInsideFailsClosed: an address netns-dns cannot pin in the table
// inside the namespace is not answered: SERVFAIL, and nothing pinned on
// the host either.
func TestPinInsideFailsClosed(t *testing.T) {
	w := newPolicyWorld(t, "policy allowlist\ndomain allowed.test tcp 80\n", 0)
	a := testutil.UniqueName("ib", 9)
	w.up(a)
	testutil.InNetns(t, a, "nft", "delete", "table", "inet", nft.InsideTable)
	rcode, addrs := w.resolve(a, "allowed.test")
	if rcode != "SERVFAIL" || len(addrs) != 0 {
		t.Errorf("allowed.test without the inside table = %s %v, want SERVFAIL and no address", rcode, addrs)
	}
	if set := testutil.InNetns(t, w.host, "nft", "list", "table", "inet", nft.NamespaceTable(a)); strings.Contains(set, allowedIP) {
		t.Errorf("%s pinned on the host although the pin inside failed:\n%s", allowedIP, set)
	}
}

// TestDenialsHostLANMetadata: what an allowlist sandbox sends to the host,
// the LAN and the metadata address is in its denial log with the
// destination (the table inside the namespace drops it; netns-dns reads
// that namespace's nflog).
func TestDenialsHostLANMetadata(t *testing.T) {
	w := newPolicyWorld(t, "policy allowlist\ndomain allowed.test tcp 80\n", 0)
	a := testutil.UniqueName("ic", 9)
	w.up(a)
	for _, addr := range []string{gateway + ":8082", inetHost + ":8083", lanAddr + ":8080", metadata + ":80"} {
		dial(t, a, "tcp4", addr)
	}
	for _, want := range []string{
		"dropped tcp " + gateway + " port 8082",
		"dropped tcp " + inetHost + " port 8083",
		"dropped tcp " + lanAddr + " port 8080",
		"dropped tcp " + metadata + " port 80",
	} {
		if log := w.waitDenial(a, want); !strings.Contains(log, want) {
			t.Errorf("denials lacks %q:\n%s", want, log)
		}
	}
}

// TestFirewallDropsEveryBlockedRange walks the one table of blocked
// ranges (netpolicy.Blocked4) through a real namespace: a TCP connection
// to an address in each unicast range is dropped by the table inside and
// in the denial log (this network, loopback, multicast and reserved
// cannot carry one; the resolver's side of the walk is
// applets/netns-dns's TestBlockedTableWalk).
func TestFirewallDropsEveryBlockedRange(t *testing.T) {
	w := newPolicyWorld(t, "policy allowlist\ndomain allowed.test tcp 80\n", 0)
	a := testutil.UniqueName("iw", 9)
	w.up(a)
	var addrs []string
	for _, p := range netpolicy.Blocked4 {
		x := p.Addr().Next()
		if x.IsLoopback() || x.IsMulticast() || p.Contains(netip.MustParseAddr("0.0.0.1")) || p.Contains(netip.MustParseAddr("240.0.0.1")) {
			continue
		}
		addrs = append(addrs, x.String())
	}
	var wg sync.WaitGroup
	for _, addr := range addrs {
		wg.Add(1)
		go func() { defer wg.Done(); dial(t, a, "tcp4", addr+":80") }()
	}
	wg.Wait()
	for _, addr := range addrs {
		want := "dropped tcp " + addr + " port 80"
		if log := w.waitDenial(a, want); !strings.Contains(log, want) {
			t.Errorf("denials lacks %q:\n%s", want, log)
		}
	}
}

// TestNewNetnsDNSGetsSockets: a netns-dns started after up holds no socket
// of the namespace, so it answers its allowed names with SERVFAIL and
// netns-setup status says so; guard hands the sockets over, and the names
// resolve again.
func TestNewNetnsDNSGetsSockets(t *testing.T) {
	w := newPolicyWorld(t, "policy allowlist\ndomain allowed.test tcp 80\n", 0)
	a := testutil.UniqueName("id", 9)
	w.up(a)
	w.stopDNS()
	w.startDNS()
	if rcode, addrs := w.resolve(a, "allowed.test"); rcode != "SERVFAIL" || len(addrs) != 0 {
		t.Errorf("allowed.test from a netns-dns without the sockets = %s %v, want SERVFAIL", rcode, addrs)
	}
	r := w.setup("status", a)
	if want := "netns-dns does not answer for " + a + ": SERVFAIL to TXT allowed.test."; r.Code != 1 || !strings.Contains(r.Stdout+r.Stderr, want) {
		t.Errorf("status = %s, want exit 1 and %q", r, want)
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
	rcode, addrs := "", []string(nil)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if rcode, addrs = w.resolve(a, "allowed.test"); rcode == "NOERROR" {
			break
		}
	}
	if rcode != "NOERROR" || strings.Join(addrs, " ") != allowedIP {
		t.Fatalf("allowed.test after guard started = %s %v, want NOERROR %s; guard said:\n%s", rcode, addrs, allowedIP, guardErr.String())
	}
	// And again after a restart while guard runs.
	w.stopDNS()
	w.startDNS()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if rcode, addrs = w.resolve(a, "allowed.test"); rcode == "NOERROR" {
			break
		}
	}
	if rcode != "NOERROR" || strings.Join(addrs, " ") != allowedIP {
		t.Fatalf("allowed.test after a restart of netns-dns under guard = %s %v, want NOERROR %s; guard said:\n%s", rcode, addrs, allowedIP, guardErr.String())
	}
}

// TestNetnsDNSWithOnlyItsCapabilities: netns-dns as the unit runs it (a
// user of its own with only CAP_NET_ADMIN and CAP_NET_BIND_SERVICE) takes
// the sockets root handed over, pins through them into the table inside
// the namespace, and reads its drops.
func TestNetnsDNSWithOnlyItsCapabilities(t *testing.T) {
	testutil.RequireCommand(t, "setpriv")
	w := newPolicyWorld(t, "policy allowlist\ndomain allowed.test tcp 80\n", 0)
	w.stopDNS()
	const nobody = 65534
	for _, dir := range []string{w.logDir, w.stateDir, filepath.Dir(w.control), filepath.Dir(w.handoverSocket())} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	w.dnsAs = []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
		"--inh-caps=-all,+net_admin,+net_bind_service", "--ambient-caps=-all,+net_admin,+net_bind_service",
		"--bounding-set=-all,+net_admin,+net_bind_service", "--"}
	w.startDNS()
	a := testutil.UniqueName("ie", 9)
	w.up(a)
	if got := w.mustResolve(a, "allowed.test"); strings.Join(got, " ") != allowedIP {
		t.Fatalf("allowed.test = %v, want %s", got, allowedIP)
	}
	if inside := testutil.InNetns(t, a, "nft", "list", "table", "inet", nft.InsideTable); !strings.Contains(inside, allowedIP) {
		t.Errorf("the table inside %s does not hold the pinned %s:\n%s", a, allowedIP, inside)
	}
	if got := dial(t, a, "tcp4", allowedIP+":80"); got != "ok" {
		t.Errorf("allowed.test:80: %s, want ok", got)
	}
	dial(t, a, "tcp4", metadata+":80")
	want := "dropped tcp " + metadata + " port 80"
	if log := w.waitDenial(a, want); !strings.Contains(log, want) {
		t.Errorf("denials lacks %q:\n%s", want, log)
	}
}

// TestGuardsHandoverKeepsTheNamespaceServed: up hands netns-dns the
// sockets, then guard (the unit's main process) hands them over again at
// its start; netns-dns must serve the namespace all along. It used to
// drop the old sockets before it held the new ones, and a launcher
// started at that moment was refused (ready: no sockets).
func TestGuardsHandoverKeepsTheNamespaceServed(t *testing.T) {
	w := newPolicyWorld(t, "policy allowlist\ndomain allowed.test tcp 80\n", 0)
	a := testutil.UniqueName("ig", 9)
	w.up(a)
	c := w.dialControl()
	defer c.Close()
	ready := func() string {
		rep, err := c.Do(netctl.Request{Op: netctl.OpReady, Namespace: a})
		if err != nil && !rep.NotReady {
			t.Fatal(err)
		}
		return rep.Error
	}
	if msg := ready(); msg != "" {
		t.Fatalf("ready after up: %s", msg)
	}
	for round := range 5 {
		guard := w.setupCmd("guard", a)
		if err := guard.Start(); err != nil {
			t.Fatal(err)
		}
		// Guard hands the sockets over at once; ask all the while.
		for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
			if msg := ready(); msg != "" {
				guard.Process.Signal(syscall.SIGTERM)
				guard.Wait()
				t.Fatalf("round %d: while guard hands the sockets over again: %s", round, msg)
			}
		}
		guard.Process.Signal(syscall.SIGTERM)
		guard.Wait()
	}
}
