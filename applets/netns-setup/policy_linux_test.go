package netnssetup

import (
	"bytes"
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/netcfg"
	"github.com/claude-sandbox/claude-sandbox/internal/netpolicy"
)

func TestPolicyFor(t *testing.T) {
	fw, err := netpolicy.ParseConfig("f", []byte("policy allowlist\ndomain a.example\ndomain *.b.example tcp 443\ndomain c.example tcp 22\n"))
	if err != nil {
		t.Fatal(err)
	}
	up := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.53:53")}
	got := policyFor("agents", netip.MustParseAddr("10.10.1.2"), fw, up)
	want := netpolicy.Policy{
		Name: "agents", Addr: netip.MustParseAddr("10.10.1.2"), Mode: "allowlist", Upstream: up,
		Table: "claude_sandbox_ns_agents",
		Domains: []netpolicy.PolicyDomain{
			{Pattern: "a.example", Ports: []string{"tcp 80", "tcp 443"}, Sets: []string{"pin0", "pin1"}, Source: "config f:2"},
			{Pattern: "*.b.example", Ports: []string{"tcp 443"}, Sets: []string{"pin1"}, Source: "config f:3"},
			{Pattern: "c.example", Ports: []string{"tcp 22"}, Sets: []string{"pin2"}, Source: "config f:4"},
		},
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b }), cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b })); diff != "" {
		t.Fatalf("policyFor mismatch (-want +got):\n%s", diff)
	}
	back, err := netpolicy.ParsePolicy("p", got.Marshal())
	if err != nil || back.Addr != got.Addr || len(back.Domains) != 3 {
		t.Fatalf("ParsePolicy(Marshal()) = %+v, %v", back, err)
	}
	open := policyFor("o", netip.MustParseAddr("10.10.1.3"), netpolicy.Config{Policy: "open"}, up)
	if open.Table != "" || open.Domains != nil || open.Mode != "open" {
		t.Fatalf("open policy = %+v", open)
	}
}

func TestDenials(t *testing.T) {
	dir := t.TempDir()
	cfg := netcfg.Config{LogDir: dir, PolicyDir: dir}
	os.WriteFile(filepath.Join(dir, "a.log.1"), []byte("old line\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "a.log"), []byte("t1 refused A x.evil.test\x1b[2J: allow with: domain x.evil.test\npartial"), 0o644)
	var out bytes.Buffer
	if err := denials(context.Background(), cfg, "a", false, multicall.Stdio{Out: &out}); err != nil {
		t.Fatal(err)
	}
	want := "old line\nt1 refused A \"x.evil.test\\x1b[2J:\" allow with: domain x.evil.test\n"
	if out.String() != want {
		t.Fatalf("denials printed %q, want %q", out.String(), want)
	}
	err := denials(context.Background(), cfg, "b", false, multicall.Stdio{Out: &out})
	if err == nil || !strings.HasPrefix(err.Error(), "no denial log of b (") {
		t.Fatalf("denials of an unknown namespace: %v", err)
	}
}

func TestDenialsUsage(t *testing.T) {
	for _, args := range [][]string{{"denials"}, {"denials", "a", "--tail"}} {
		err := run(context.Background(), args, multicall.Stdio{Out: os.Stdout, Err: os.Stderr})
		if multicall.Code(err) != 2 || !strings.HasSuffix(multicall.Message(err), "usage: netns-setup denials NAME [--follow]") {
			t.Fatalf("run(%q) = exit %d %q", args, multicall.Code(err), multicall.Message(err))
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDenialsFollow: --follow prints lines as they are appended, and the
// new file after a rotation from its start.
func TestDenialsFollow(t *testing.T) {
	dir := t.TempDir()
	cfg := netcfg.Config{LogDir: dir, PolicyDir: dir}
	log := filepath.Join(dir, "a.log")
	os.WriteFile(log, []byte("first\n"), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error)
	go func() { done <- denials(ctx, cfg, "a", true, multicall.Stdio{Out: &out}) }()
	waitFor := func(want string) {
		t.Helper()
		for i := 0; !strings.Contains(out.String(), want); i++ {
			if i > 100 {
				t.Fatalf("denials --follow printed %q, want %q in it", out.String(), want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitFor("first\n")
	f, _ := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("second\n")
	f.Close()
	waitFor("first\nsecond\n")
	os.Rename(log, log+".1")
	os.WriteFile(log, []byte("third\n"), 0o644)
	waitFor("first\nsecond\nthird\n")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestLookupUser(t *testing.T) {
	if uid, err := netpolicy.LookupUser("root"); err != nil || uid != 0 {
		t.Errorf("netpolicy.LookupUser(root) = %d, %v, want 0", uid, err)
	}
	if gid, err := netpolicy.LookupGroup("root"); err != nil || gid != 0 {
		t.Errorf("netpolicy.LookupGroup(root) = %d, %v, want 0", gid, err)
	}
	if uid, err := netpolicy.LookupUser("4242"); err != nil || uid != 4242 {
		t.Errorf("netpolicy.LookupUser(4242) = %d, %v, want 4242", uid, err)
	}
	_, _, err := netpolicy.Owners("agents", []netpolicy.Approver{{User: "no-such-user-x", Line: "f:3"}}, netpolicy.LookupUser, netpolicy.LookupGroup)
	if want := `f:3: approvers: no user no-such-user-x: name an existing user or a uid`; err == nil || err.Error() != want {
		t.Errorf("an approver who is no user: %v, want %q", err, want)
	}
}
