package claude

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/miekg/dns"

	"github.com/claude-sandbox/claude-sandbox/internal/netcfg"
	"github.com/claude-sandbox/claude-sandbox/internal/netctl"
	"github.com/claude-sandbox/claude-sandbox/internal/netctl/netctltest"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// TestResolverAnswers: the launcher refuses a policy namespace whose
// netns-dns does not answer, with the fix on one line, and starts once it
// answers (REFUSED, as netns-dns answers the host, will do). It runs in a
// throwaway network namespace whose loopback plays the bridge address.
func TestResolverAnswers(t *testing.T) {
	ns := testutil.Netns(t, "rslv")
	testutil.InNetns(t, ns, "ip", "link", "set", "lo", "up")
	dir := t.TempDir()
	cfg := netcfg.Config{PolicyDir: dir, BridgeAddr: netip.MustParsePrefix("127.0.0.1/8")}
	control := filepath.Join(dir, "no-control.sock")
	check := func(name string) (err error) {
		if e := testutil.InNetnsThread(ns, func() error { err = netctl.ResolverAnswers(cfg, name, control); return nil }); e != nil {
			t.Fatal(e)
		}
		return err
	}

	if err := check("nopolicy"); err != nil {
		t.Fatalf("resolverAnswers without a policy file = %v, want nil (the host's resolver)", err)
	}
	for name, mode := range map[string]string{"agents": `"allowlist"`, "old": `"open","no_policy_line":true`} {
		policy := `{"name":"` + name + `","addr":"10.10.0.2","mode":` + mode + `,"upstream":["127.0.0.53:53"]}`
		if err := os.WriteFile(filepath.Join(dir, name+".json"), []byte(policy), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := check("old"); err != nil {
		t.Fatalf("resolverAnswers without a policy line = %v, want nil (its resolv.conf names the resolver)", err)
	}
	err := check("agents")
	if err == nil || !strings.HasPrefix(err.Error(), "netns-dns does not answer on 127.0.0.1:53 for namespace agents (") ||
		!strings.HasSuffix(err.Error(), "): sudo systemctl restart netns-dns") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("resolverAnswers with nothing on port 53 = %v, want one line: netns-dns does not answer on 127.0.0.1:53 for namespace agents (...): sudo systemctl restart netns-dns", err)
	}

	var pc net.PacketConn
	if err := testutil.InNetnsThread(ns, func() (err error) { pc, err = net.ListenPacket("udp4", "127.0.0.1:53"); return err }); err != nil {
		t.Fatal(err)
	}
	refuse := dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		r := new(dns.Msg)
		w.WriteMsg(r.SetRcode(q, dns.RcodeRefused))
	})
	s := &dns.Server{PacketConn: pc, Handler: refuse}
	go s.ActivateAndServe()
	t.Cleanup(func() { s.Shutdown() })
	if err := check("agents"); err != nil {
		t.Fatalf("resolverAnswers with netns-dns answering = %v, want nil", err)
	}

	// A netns-dns with a control socket that says it cannot serve the
	// namespace (no sockets of its inside table): refused with its line.
	fake := netctltest.New(t)
	control = fake.Path
	if err := check("agents"); err != nil {
		t.Fatalf("resolverAnswers with a control socket that says ready = %v, want nil", err)
	}
	// Port 53 starved (another user floods the socket netns-dns shares
	// with every host user: here, nothing answers there at all): the
	// control socket's word, whose limits are per uid, is enough.
	s.Shutdown()
	var mute net.PacketConn
	if err := testutil.InNetnsThread(ns, func() (err error) { mute, err = net.ListenPacket("udp4", "127.0.0.1:53"); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mute.Close() })
	for i := range 20 {
		if err := check("agents"); err != nil {
			t.Fatalf("start %d of 20 with port 53 starved and the control socket saying ready: %v, want nil", i+1, err)
		}
	}
	if got := fake.Requests(); len(got) == 0 || got[len(got)-1].Op != netctl.OpReady {
		t.Fatalf("requests = %+v, want a ready", got)
	}
	msg := "netns-dns lacks the sockets of the table inside namespace agents, and answers none of its names: sudo systemctl restart netns@agents"
	fake.Reply(netctl.OpReady, netctl.Reply{Error: "uid 1001 owns no namespace, and users who own none have 16 control connections open already: try again later"})
	if err := check("agents"); err == nil || !strings.HasPrefix(err.Error(), "netns-dns does not answer on 127.0.0.1:53") {
		t.Fatalf("resolverAnswers with a busy control socket and port 53 starved = %v, want port 53's error (the control socket said nothing)", err)
	}
	// Not served for a moment (guard hands the sockets over just after
	// the namespace came up): the launcher asks again, and starts.
	var asked atomic.Int32
	fake.Handle(netctl.OpReady, func(netctl.Request) netctl.Reply {
		if asked.Add(1) < 3 {
			return netctl.Reply{NotReady: true, Error: msg}
		}
		return netctl.Reply{}
	})
	if err := check("agents"); err != nil || asked.Load() != 3 {
		t.Fatalf("resolverAnswers while netns-dns takes the sockets = %v after %d questions, want nil after 3", err, asked.Load())
	}
	fake.Handle(netctl.OpReady, func(netctl.Request) netctl.Reply { return netctl.Reply{NotReady: true, Error: msg} })
	if err := check("agents"); err == nil || err.Error() != "netns-dns: "+msg {
		t.Fatalf("resolverAnswers with netns-dns not ready = %v, want %q", err, "netns-dns: "+msg)
	}
	if got := fake.Requests(); got[len(got)-1].Op != netctl.OpReady || got[len(got)-1].Namespace != "agents" {
		t.Fatalf("requests = %+v, want a ready of agents last", got)
	}
}
