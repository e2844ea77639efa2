package netctl

import (
	"net"
	"path/filepath"
	"testing"
)

func TestAdvice(t *testing.T) {
	for _, tc := range []struct {
		name     string
		d        Denial
		ns       string
		cmd, why string
	}{
		{"name", Denial{Name: "pypi.org", Approvable: true}, "", "claude-sandbox net allow pypi.org --session", ""},
		{"other namespace", Denial{Name: "pypi.org", Approvable: true}, "shared", "claude-sandbox net allow pypi.org --session --namespace shared", ""},
		{"forbidden", Denial{Name: "pypi.org"}, "", "", WhyNotYours},
		{"drop", Denial{Drop: "tcp 203.0.113.7:22", Approvable: true}, "", "", WhyDrop},
		{"shell in the name", Denial{Name: "$(reboot).example.com", Approvable: true}, "", "", WhyNotName},
		{"escaped byte", Denial{Name: `a\010b.example.com`, Approvable: true}, "", "", WhyNotName},
		{"top-level domain", Denial{Name: "localhost", Approvable: true}, "", "", WhyNotName},
		{"a name that reads as a flag", Denial{Name: "-rf.example.com", Approvable: true}, "shared", "claude-sandbox net allow --session --namespace shared -- -rf.example.com", ""},
		{"bad namespace", Denial{Name: "pypi.org", Approvable: true}, "x;y", "", WhyNotName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, why := Advice(tc.d, ScopeSession, tc.ns)
			if cmd != tc.cmd || why != tc.why {
				t.Errorf("Advice(%+v, %q) = %q, %q, want %q, %q", tc.d, tc.ns, cmd, why, tc.cmd, tc.why)
			}
		})
	}
}

// TestDoReadsARefusalBeforeTheRequest: a server that answers and closes
// before it reads (netns-dns refusing one connection too many) gives its
// reason, though the request can no longer be written (EPIPE).
func TestDoReadsARefusalBeforeTheRequest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		s, err := ln.Accept()
		if err != nil {
			return
		}
		NewConn(s).Send(Reply{Error: "too many"})
		s.Close()
	}()
	c, err := Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	<-closed
	if _, err := c.Do(Request{Op: OpOwned}); err == nil || err.Error() != "netns-dns: too many" {
		t.Fatalf("Do against a refusing server = %v, want netns-dns: too many", err)
	}
}
