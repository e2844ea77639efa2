package nft

import (
	"errors"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// TestApplyNamespaceMatchesNft: the namespace table applied through netlink
// is what nft makes of its golden file, and Pin fills its sets with
// timeouts, a second Pin replacing the first one's timeout.
func TestApplyNamespaceMatchesNft(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireCommand(t, "nft")
	ours, theirs := testutil.Netns(t, "nftD"), testutil.Netns(t, "nftE")
	f := testutil.OpenNetns(t, ours)
	rs := BuildNamespace(namespaceSpec())
	if err := Apply(rs, int(f.Fd())); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	testutil.InNetns(t, theirs, "nft", "-f", filepath.Join("testdata", "namespace-allowlist.nft"))
	got := testutil.InNetns(t, ours, "nft", "list", "table", "inet", rs.Table)
	want := testutil.InNetns(t, theirs, "nft", "list", "table", "inet", rs.Table)
	if got != want {
		t.Fatalf("kernel ruleset from Apply:\n%s\nfrom nft -f of the golden file:\n%s", got, want)
	}
	if normalize(got) != normalize(rs.String()) {
		t.Fatalf("nft list prints:\n%s\nString() is:\n%s", got, rs.String())
	}

	p, err := NewPinner(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	a := []netip.Addr{netip.MustParseAddr("203.0.113.5"), netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("203.0.113.6")}
	if err := p.Pin(rs.Table, PinSet(1), a, time.Hour); err != nil {
		t.Fatalf("Pin: %v", err)
	}
	if err := p.Pin(rs.Table, PinSet(1), a[:1], 10*time.Minute); err != nil {
		t.Fatalf("Pin again: %v", err)
	}
	set := testutil.InNetns(t, ours, "nft", "list", "set", "inet", rs.Table, PinSet(1))
	if !strings.Contains(set, "203.0.113.5 timeout 10m") || !strings.Contains(set, "203.0.113.6 timeout 1h") {
		t.Fatalf("pin set after two Pins:\n%s", set)
	}

	flows := []Flow{{a[0], "tcp", 443}, {a[0], "udp", 3478}, {a[1], "tcp", 22}, {a[2], "tcp", 22}}
	if err := p.PinFlows(rs.Table, ApprovedSet, flows, time.Hour); err != nil {
		t.Fatalf("PinFlows: %v", err)
	}
	if err := p.PinFlows(rs.Table, ApprovedSet, flows[:1], 10*time.Minute); err != nil {
		t.Fatalf("PinFlows again: %v", err)
	}
	set = testutil.InNetns(t, ours, "nft", "list", "set", "inet", rs.Table, ApprovedSet)
	for _, want := range []string{"203.0.113.5 . tcp . 443 timeout 10m", "203.0.113.5 . udp . 3478 timeout 1h", "203.0.113.6 . tcp . 22 timeout 1h"} {
		if !strings.Contains(set, want) {
			t.Fatalf("approved set after two PinFlows lacks %q:\n%s", want, set)
		}
	}
	if err := p.UnpinFlows(rs.Table, ApprovedSet, []Flow{flows[0], {netip.MustParseAddr("198.51.100.1"), "tcp", 80}}); err != nil {
		t.Fatalf("UnpinFlows: %v", err)
	}
	set = testutil.InNetns(t, ours, "nft", "list", "set", "inet", rs.Table, ApprovedSet)
	if strings.Contains(set, "tcp . 443") || strings.Contains(set, "198.51.100.1") || !strings.Contains(set, "203.0.113.5 . udp . 3478") {
		t.Fatalf("approved set after UnpinFlows of 203.0.113.5 tcp 443 and one not there:\n%s", set)
	}
	if err := p.FlushFlows(rs.Table, ApprovedSet); err != nil {
		t.Fatalf("FlushFlows: %v", err)
	}
	if set = testutil.InNetns(t, ours, "nft", "list", "set", "inet", rs.Table, ApprovedSet); strings.Contains(set, "203.0.113") {
		t.Fatalf("approved set after FlushFlows:\n%s", set)
	}
}

// TestApplyInsideMatchesNft: the table inside a namespace applied through
// netlink is what nft makes of its golden file.
func TestApplyInsideMatchesNft(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireCommand(t, "nft")
	ours, theirs := testutil.Netns(t, "nftF"), testutil.Netns(t, "nftG")
	f := testutil.OpenNetns(t, ours)
	rs := BuildInside(insideSpec())
	if err := Apply(rs, int(f.Fd())); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	testutil.InNetns(t, theirs, "nft", "-f", filepath.Join("testdata", "inside.nft"))
	got := testutil.InNetns(t, ours, "nft", "list", "table", "inet", rs.Table)
	want := testutil.InNetns(t, theirs, "nft", "list", "table", "inet", rs.Table)
	if got != want {
		t.Fatalf("kernel ruleset from Apply:\n%s\nfrom nft -f of the golden file:\n%s", got, want)
	}
	if normalize(got) != normalize(rs.String()) {
		t.Fatalf("nft list prints:\n%s\nString() is:\n%s", got, rs.String())
	}
}

// TestFdPinner: a socket opened in a namespace (Socket) pins into the sets
// of the table there from any namespace, a second Pin replacing the
// first one's timeout; a missing table is an error (ENOENT).
func TestFdPinner(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireCommand(t, "nft")
	ns := testutil.Netns(t, "nftH")
	f := testutil.OpenNetns(t, ns)
	rs := BuildInside(insideSpec())
	if err := Apply(rs, int(f.Fd())); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	fd, err := Socket(int(f.Fd()))
	if err != nil {
		t.Fatalf("Socket: %v", err)
	}
	p, err := NewFdPinner(fd)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	a := []netip.Addr{netip.MustParseAddr("203.0.113.5"), netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("203.0.113.6")}
	if err := p.Pin(rs.Table, PinSet(1), a, time.Hour); err != nil {
		t.Fatalf("Pin: %v", err)
	}
	if err := p.Pin(rs.Table, PinSet(1), a[:1], 10*time.Minute); err != nil {
		t.Fatalf("Pin again: %v", err)
	}
	set := testutil.InNetns(t, ns, "nft", "list", "set", "inet", rs.Table, PinSet(1))
	if !strings.Contains(set, "203.0.113.5 timeout 10m") || !strings.Contains(set, "203.0.113.6 timeout 1h") {
		t.Fatalf("pin set after two Pins:\n%s", set)
	}
	if err := p.Pin("no_such_table", PinSet(1), a, time.Hour); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("Pin into a missing table: %v, want ENOENT", err)
	}
	// The socket still works after an error.
	if err := p.Pin(rs.Table, PinSet(0), a[2:], time.Hour); err != nil {
		t.Fatalf("Pin after an error: %v", err)
	}
	// The approved set of the mirrored namespace table takes flows.
	flows := []Flow{{a[0], "tcp", 443}, {a[0], "udp", 3478}, {a[1], "tcp", 22}}
	if err := p.PinFlows(rs.Table, ApprovedSet, flows, time.Hour); err != nil {
		t.Fatalf("PinFlows: %v", err)
	}
	if err := p.UnpinFlows(rs.Table, ApprovedSet, flows[:1]); err != nil {
		t.Fatalf("UnpinFlows: %v", err)
	}
	set = testutil.InNetns(t, ns, "nft", "list", "set", "inet", rs.Table, ApprovedSet)
	if strings.Contains(set, "tcp . 443") || !strings.Contains(set, "203.0.113.5 . udp . 3478 timeout 1h") {
		t.Fatalf("approved set after PinFlows and UnpinFlows of 203.0.113.5 tcp 443:\n%s", set)
	}
	if err := p.FlushFlows(rs.Table, ApprovedSet); err != nil {
		t.Fatalf("FlushFlows: %v", err)
	}
	if set = testutil.InNetns(t, ns, "nft", "list", "set", "inet", rs.Table, ApprovedSet); strings.Contains(set, "203.0.113") {
		t.Fatalf("approved set after FlushFlows:\n%s", set)
	}
	if err := p.PinFlows(rs.Table, ApprovedSet, flows[:1], time.Hour); err != nil {
		t.Fatalf("PinFlows after FlushFlows: %v", err)
	}
}
