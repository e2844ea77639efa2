//go:build linux

package network

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

const allowlistConf = "policy allowlist\npreset web\ndomain *.wild.test\ndomain cname.test\ndomain short.test\n"

// TestAllowlist: in an allowlist namespace, allowed names resolve through
// netns-dns and their servers answer; everything else is refused, never
// forwarded, dropped, and in the denial log.
func TestAllowlist(t *testing.T) {
	w := newPolicyWorld(t, allowlistConf, 0)
	if err := os.WriteFile(filepath.Join(w.presetDir, "web"), []byte("# test preset\nallowed.test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := testutil.UniqueName("pa", 9)
	w.up(a)
	if got := testutil.InNetns(t, w.host, "cat", filepath.Join(w.etc, a, "resolv.conf")); !strings.Contains(got, "\nnameserver "+gateway+"\n") || strings.Count(got, "nameserver") != 1 {
		t.Fatalf("resolv.conf of an allowlist namespace:\n%s\nwant only nameserver %s", got, gateway)
	}

	// An allowed name (from a preset) resolves, and its server answers.
	if got := w.mustResolve(a, "allowed.test"); strings.Join(got, " ") != allowedIP {
		t.Fatalf("allowed.test = %v, want %s", got, allowedIP)
	}
	if got := dial(t, a, "tcp4", allowedIP+":80"); got != "ok" {
		t.Fatalf("allowed.test:80 after resolving: %s", got)
	}

	// An unlisted name is refused, and the upstream never hears of it.
	if rcode, _ := w.resolve(a, "exfil-c2VjcmV0.evil.test"); rcode != "REFUSED" {
		t.Fatalf("unlisted name: %s, want REFUSED", rcode)
	}
	if rcode, _ := w.resolve(a, "evil.test"); rcode != "REFUSED" {
		t.Fatalf("evil.test: %s, want REFUSED", rcode)
	}
	if got := w.auth.names(); strings.Contains(got, "evil") {
		t.Fatalf("the upstream was asked %q: an unlisted name was forwarded", got)
	}

	// Its address is dropped, and both show in the denial log.
	if got := dial(t, a, "tcp4", evilIP+":80"); got != "no route to host" {
		t.Fatalf("direct connection to an unlisted address: %s, want no route to host", got)
	}
	log := w.waitDenial(a, "dropped tcp "+evilIP+" port 80")
	for _, want := range []string{
		"refused A exfil-c2VjcmV0.evil.test: allow with: domain exfil-c2VjcmV0.evil.test",
		"dropped tcp " + evilIP + " port 80: allow with: allow " + evilIP + " tcp 80",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("denials lacks %q:\n%s", want, log)
		}
	}

	// DNS to another server, DNS over TLS, QUIC (UDP 443) to an allowed
	// address: all dropped, and none arrives.
	if got := dial(t, a, "tcp4", otherDNS+":53"); got != "no route to host" {
		t.Errorf("TCP DNS to another server: %s", got)
	}
	if got := dial(t, a, "udp4", otherDNS+":53"); got != "no route to host" {
		t.Errorf("UDP DNS to another server: %s", got)
	}
	if got := dial(t, a, "tcp4", allowedIP+":853"); got != "no route to host" {
		t.Errorf("port 853 of an allowed address: %s", got)
	}
	if got := dial(t, a, "udp4", allowedIP+":443"); got != "no route to host" {
		t.Errorf("UDP 443 of an allowed address: %s", got)
	}
	if got := dial(t, a, "udp4", allowedIP+":853"); got != "no route to host" {
		t.Errorf("UDP 853 of an allowed address: %s", got)
	}
	if got := w.other.names(); got != "" {
		t.Errorf("the other DNS server was asked %q", got)
	}
	select {
	case got := <-w.udpSeen:
		t.Errorf("a UDP listener received %q", got)
	default:
	}

	// ICMP echo, even to an allowed and pinned address: rejected by the
	// table inside the namespace as it leaves (the send fails with EPERM).
	if got := ping(t, a, allowedIP); got != "operation not permitted" {
		t.Errorf("ping of an allowed address: %s, want operation not permitted", got)
	}

	// A wildcard allows names below it, not itself.
	if got := w.mustResolve(a, "a.wild.test"); strings.Join(got, " ") != wildIP {
		t.Fatalf("a.wild.test = %v", got)
	}
	if got := dial(t, a, "tcp4", wildIP+":80"); got != "ok" {
		t.Fatalf("a.wild.test:80: %s", got)
	}
	if rcode, _ := w.resolve(a, "wild.test"); rcode != "REFUSED" {
		t.Fatalf("wild.test under *.wild.test: %s, want REFUSED", rcode)
	}

	// A CNAME chain: the address at its end is pinned.
	if got := w.mustResolve(a, "cname.test"); strings.Join(got, " ") != cnameIP {
		t.Fatalf("cname.test = %v", got)
	}
	if got := dial(t, a, "tcp4", cnameIP+":80"); got != "ok" {
		t.Fatalf("end of the CNAME chain:80: %s", got)
	}

	// up again (what a restart or a repair does) makes the table anew,
	// without the pins: netns-dns must pin again on the next answer.
	w.mustSetup("up", a)
	w.mustResolve(a, "allowed.test")
	if got := dial(t, a, "tcp4", allowedIP+":80"); got != "ok" {
		t.Errorf("allowed.test:80 after up again: %s", got)
	}
	if t.Failed() {
		t.Logf("ruleset:\n%s", testutil.InNetns(t, w.host, "nft", "list", "ruleset"))
	}
}

// TestPinExpiry: once the pin of a short TTL ends, the address is dropped
// again.
func TestPinExpiry(t *testing.T) {
	w := newPolicyWorld(t, allowlistConf, time.Second)
	os.WriteFile(filepath.Join(w.presetDir, "web"), []byte("allowed.test\n"), 0o644)
	a := testutil.UniqueName("pe", 9)
	w.up(a)
	w.mustResolve(a, "short.test")
	if got := dial(t, a, "tcp4", shortIP+":80"); got != "ok" {
		t.Fatalf("short.test:80 while pinned: %s", got)
	}
	// Wait for the kernel to drop the element (TTL 1 s, floor 1 s).
	deadline := time.Now().Add(20 * time.Second)
	for {
		out := testutil.InNetns(t, w.host, "nft", "list", "table", "inet", "claude_sandbox_ns_"+a)
		if !strings.Contains(out, shortIP) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pin of %s still there after 20 s:\n%s", shortIP, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got := dial(t, a, "tcp4", shortIP+":80"); got != "no route to host" {
		t.Fatalf("short.test:80 after its pin expired: %s, want no route to host", got)
	}
}

// TestTwoPolicies: an allowlist and an open namespace at once; a changed
// policy takes effect when one namespace is made again (down, up: what
// systemctl restart netns@NAME does) and the other keeps its pins.
func TestTwoPolicies(t *testing.T) {
	w := newPolicyWorld(t, allowlistConf, 0)
	os.WriteFile(filepath.Join(w.presetDir, "web"), []byte("allowed.test\n"), 0o644)
	a, b, o := testutil.UniqueName("pa", 9), testutil.UniqueName("pb", 9), testutil.UniqueName("po", 9)
	w.writeNsConf(o, "policy open\n")
	w.up(a)
	w.up(b)
	w.up(o)

	// Open: every name, every address of the internet.
	if got := w.mustResolve(o, "evil.test"); strings.Join(got, " ") != evilIP {
		t.Fatalf("evil.test in the open namespace = %v", got)
	}
	if got := dial(t, o, "tcp4", evilIP+":80"); got != "ok" {
		t.Fatalf("evil.test:80 from the open namespace: %s", got)
	}
	if got := ping(t, o, evilIP); got != "reply" {
		t.Fatalf("ping from the open namespace: %s, want reply", got)
	}
	// Allowlist, at the same time.
	if rcode, _ := w.resolve(a, "evil.test"); rcode != "REFUSED" {
		t.Fatalf("evil.test in the allowlist namespace: %s", rcode)
	}
	if got := dial(t, a, "tcp4", evilIP+":80"); got != "no route to host" {
		t.Fatalf("evil.test:80 from the allowlist namespace: %s", got)
	}
	w.mustResolve(a, "allowed.test")
	w.mustResolve(b, "allowed.test")

	// b gets evil.test; only b is made again.
	w.writeNsConf(b, "domain evil.test\n")
	w.mustSetup("down", b)
	w.mustSetup("up", b)
	if got := w.mustResolve(b, "evil.test"); strings.Join(got, " ") != evilIP {
		t.Fatalf("evil.test in b after its restart = %v", got)
	}
	if got := dial(t, b, "tcp4", evilIP+":80"); got != "ok" {
		t.Fatalf("evil.test:80 from b after its restart: %s", got)
	}
	if rcode, _ := w.resolve(a, "evil.test"); rcode != "REFUSED" {
		t.Fatalf("evil.test in a after b's restart: %s", rcode)
	}
	// a's pin survived b's restart: its server answers without a new query.
	if out := testutil.InNetns(t, w.host, "nft", "list", "table", "inet", "claude_sandbox_ns_"+a); !strings.Contains(out, allowedIP) {
		t.Fatalf("a's pins after b's restart:\n%s", out)
	}
	if got := dial(t, a, "tcp4", allowedIP+":80"); got != "ok" {
		t.Fatalf("allowed.test:80 from a after b's restart: %s", got)
	}
	// down removes b's table and policy.
	w.mustSetup("down", b)
	if out := testutil.InNetns(t, w.host, "nft", "list", "tables"); strings.Contains(out, "claude_sandbox_ns_"+b) {
		t.Fatalf("b's table after down:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(w.policyDir, b+".json")); !os.IsNotExist(err) {
		t.Fatalf("b's policy after down: %v", err)
	}
}
