package fakeapi

import (
	"net"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// TestListenIn serves the fake API on loopback inside a namespace of the
// test's own: a client in the namespace gets an answer, the same address
// from the host's namespace is refused.
func TestListenIn(t *testing.T) {
	testutil.RequireCommand(t, "curl")
	ns := testutil.Netns(t, "fakeapi")
	testutil.InNetns(t, ns, "ip", "link", "set", "lo", "up")
	l, err := ListenIn(testutil.OpenNetns(t, ns), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(Turn{Text("from the namespace")})
	s.StartOn(t, l)
	out := testutil.InNetns(t, ns, "curl", "-sS", "-d", loopBody, s.URL()+"/v1/messages")
	if !strings.Contains(out, "from the namespace") {
		t.Errorf("curl in the namespace: %s", out)
	}
	if c, err := net.Dial("tcp", l.Addr().String()); err == nil {
		c.Close()
		t.Errorf("%s answers in the host's namespace too", l.Addr())
	} else if !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("dial %s from the host: %v, want connection refused", l.Addr(), err)
	}
}
