package netnsdns

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// blockingUpstream holds every query until release is closed.
type blockingUpstream struct {
	started chan struct{}
	release chan struct{}
}

func (b *blockingUpstream) Exchange(_ context.Context, m *dns.Msg, _ netip.AddrPort) (*dns.Msg, error) {
	b.started <- struct{}{}
	<-b.release
	r := new(dns.Msg)
	r.SetReply(m)
	return r, nil
}

// TestInflightPerNamespace: a namespace with maxInflight queries waiting
// upstream gets SERVFAIL at once for the next, and another namespace is
// still forwarded.
func TestInflightPerNamespace(t *testing.T) {
	r, _, _, _ := newTestResolver(t)
	up := &blockingUpstream{started: make(chan struct{}, 2*maxInflight), release: make(chan struct{})}
	r.Upstream = up
	done := make(chan int, maxInflight)
	for i := 0; i < maxInflight; i++ {
		go func() { done <- r.Answer(context.Background(), allowSrc, query("x.example.com.", dns.TypeA)).Rcode }()
		<-up.started
	}
	if resp := r.Answer(context.Background(), allowSrc, query("y.example.com.", dns.TypeA)); resp.Rcode != dns.RcodeServerFailure {
		t.Fatalf("query %d of a namespace: %s, want SERVFAIL", maxInflight+1, dns.RcodeToString[resp.Rcode])
	}
	other := make(chan int, 1)
	go func() { other <- r.Answer(context.Background(), openSrc, query("evil.test.", dns.TypeA)).Rcode }()
	<-up.started // forwarded, although the first namespace is at its limit
	close(up.release)
	if rc := <-other; rc != dns.RcodeSuccess {
		t.Fatalf("other namespace: %s", dns.RcodeToString[rc])
	}
	for i := 0; i < maxInflight; i++ {
		<-done
	}
	if resp := r.Answer(context.Background(), allowSrc, query("y.example.com.", dns.TypeA)); resp.Rcode != dns.RcodeSuccess {
		t.Fatalf("after the upstream answered: %s, want NOERROR", dns.RcodeToString[resp.Rcode])
	}
}

// TestLimitListener: the connection of an address over the limit is
// closed as it is accepted; closing one makes room.
func TestLimitListener(t *testing.T) {
	inner, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newLimitListener(inner, 2)
	defer l.Close()
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp4", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	dial()
	dial()
	s1, _ := <-accepted, <-accepted
	third := dial()
	third.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := third.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("third connection of one address: read %v, want EOF (closed by the server)", err)
	}
	s1.Close()
	s1.Close() // a second Close must not free a second place
	dial()
	<-accepted
	fifth := dial()
	fifth.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := fifth.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("connection over the limit after one closed: read %v, want EOF", err)
	}
}

type failingUpstream struct{}

func (failingUpstream) Exchange(context.Context, *dns.Msg, netip.AddrPort) (*dns.Msg, error) {
	return nil, io.ErrUnexpectedEOF
}

// TestUpstreamErrorsLogged: a sandbox that makes the upstream fail (names
// whose servers never answer) writes one journal line per namespace every
// upstreamLogEvery, with the count of failures left out, not one per query.
func TestUpstreamErrorsLogged(t *testing.T) {
	r, _, _, _ := newTestResolver(t)
	r.Upstream = failingUpstream{}
	now := time.Unix(1000, 0)
	r.now = func() time.Time { return now }
	var lines []string
	r.Logf = func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	for i := 0; i < 1000; i++ {
		if rc := r.Answer(context.Background(), allowSrc, query("x.example.com.", dns.TypeA)).Rcode; rc != dns.RcodeServerFailure {
			t.Fatalf("rcode %s", dns.RcodeToString[rc])
		}
	}
	now = now.Add(upstreamLogEvery)
	r.Answer(context.Background(), allowSrc, query("x.example.com.", dns.TypeA))
	want := []string{
		"upstream of agents: unexpected EOF",
		"upstream of agents: unexpected EOF (and 999 more failures since the last line)",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("journal lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}
