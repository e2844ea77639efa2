//go:build linux

package network

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/claude-sandbox/claude-sandbox/internal/netctl"
	"github.com/claude-sandbox/claude-sandbox/internal/nft"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// netctlEnv carries a netctlSpec to the netctl role.
const netctlEnv = "NETNS_TEST_NETCTL"

// netctlSpec is what the netctl role does: one request on the control
// socket, and the checks of what a sandbox could reach.
type netctlSpec struct {
	Socket  string
	Request *netctl.Request
	// Abstract are abstract socket names to connect to.
	Abstract []string
}

type netctlResult struct {
	Uid      int
	DialErr  string
	Reply    netctl.Reply
	Abstract map[string]string
	// ProcNetUnix is /proc/net/unix as the process sees it.
	ProcNetUnix string
}

// netctlMain runs the netctl role.
func netctlMain() int {
	var spec netctlSpec
	if err := json.Unmarshal([]byte(os.Getenv(netctlEnv)), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "netctl:", err)
		return 2
	}
	res := netctlResult{Uid: os.Getuid(), Abstract: map[string]string{}}
	c, err := net.Dial("unix", spec.Socket)
	if err != nil {
		res.DialErr = errnoOf(err)
	} else if spec.Request != nil {
		conn := netctl.NewConn(c)
		if err := conn.Send(spec.Request); err == nil {
			conn.Recv(&res.Reply)
		}
		conn.Close()
	}
	for _, a := range spec.Abstract {
		c, err := net.Dial("unix", "@"+a)
		if err == nil {
			c.Close()
		}
		res.Abstract[a] = errnoOf(err)
	}
	b, _ := os.ReadFile("/proc/net/unix")
	res.ProcNetUnix = string(b)
	json.NewEncoder(os.Stdout).Encode(res)
	return 0
}

// asUser runs the netctl role as uid (in namespace ns when set: nsenter,
// as root, then the uid).
func (w *policyWorld) asUser(uid uint32, ns string, spec netctlSpec) netctlResult {
	w.t.Helper()
	args := []string{"--setuid=" + strconv.Itoa(int(uid)), "--setgid=" + strconv.Itoa(int(uid))}
	if ns != "" {
		args = append(args, "--net=/run/netns/"+ns)
	}
	return w.runNetctl(uid, exec.Command("nsenter", append(args, "--", selfBinary(w.t))...), spec)
}

// asUserInGroups is asUser (in the host's network) as uid in the
// supplementary groups gids.
func (w *policyWorld) asUserInGroups(uid uint32, gids []uint32, spec netctlSpec) netctlResult {
	w.t.Helper()
	var groups []string
	for _, g := range gids {
		groups = append(groups, strconv.Itoa(int(g)))
	}
	id := strconv.Itoa(int(uid))
	return w.runNetctl(uid, exec.Command("setpriv", "--reuid="+id, "--regid="+id, "--groups="+strings.Join(groups, ","), "--", selfBinary(w.t)), spec)
}

// runNetctl runs cmd, the test binary as a netctl client of spec, as uid.
func (w *policyWorld) runNetctl(uid uint32, cmd *exec.Cmd, spec netctlSpec) netctlResult {
	w.t.Helper()
	js, _ := json.Marshal(spec)
	cmd.Env = []string{roleEnv + "=netctl", netctlEnv + "=" + string(js), "PATH=/usr/bin:/bin"}
	r := testutil.RunCommand(w.t, cmd)
	var res netctlResult
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &res) != nil {
		w.t.Fatalf("netctl as uid %d: %s", uid, r)
	}
	if res.Uid != int(uid) {
		w.t.Fatalf("netctl ran as uid %d, want %d", res.Uid, uid)
	}
	return res
}

// ask sends req as uid and returns the reply's error ("" for none).
func (w *policyWorld) ask(uid uint32, req netctl.Request) netctl.Reply {
	w.t.Helper()
	res := w.asUser(uid, "", netctlSpec{Socket: w.control, Request: &req})
	if res.DialErr != "" {
		w.t.Fatalf("uid %d: connect to the control socket %s: %s", uid, w.control, res.DialErr)
	}
	return res.Reply
}

// dialControl connects to netns-dns's control socket as root, waiting for
// it to listen.
func (w *policyWorld) dialControl() *netctl.Conn {
	w.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := netctl.Dial(w.control)
		if err == nil {
			return c
		}
		if time.Now().After(deadline) {
			w.t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// watchEvents opens a watch of ns as root and returns its events.
func (w *policyWorld) watchEvents(ns string) <-chan netctl.Event {
	w.t.Helper()
	c := w.dialControl()
	w.t.Cleanup(func() { c.Close() })
	if _, err := c.Do(netctl.Request{Op: netctl.OpWatch, Namespace: ns}); err != nil {
		w.t.Fatalf("watch %s: %v", ns, err)
	}
	ch := make(chan netctl.Event, 64)
	go func() {
		defer close(ch)
		for {
			var e netctl.Event
			if err := c.Recv(&e); err != nil {
				return
			}
			ch <- e
		}
	}()
	return ch
}

func waitEvent(t *testing.T, ch <-chan netctl.Event, kind, name string) netctl.Event {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatalf("the watch ended before a %s event of %s", kind, name)
			}
			if e.Kind == kind && e.Name == name {
				return e
			}
		case <-timeout:
			t.Fatalf("no %s event of %s", kind, name)
		}
	}
}

// ownedNamespace is a namespace name of the launcher's per-user form,
// NAME-UID, whose owner is uid.
func ownedNamespace(uid uint32) string {
	return testutil.UniqueName("ap", 6) + "-" + strconv.Itoa(int(uid))
}

// strangerUid is a uid of no namespace and no user: the kernel names it
// all the same.
const strangerUid = 61234

const approveConf = "policy allowlist\ndomain allowed.test\ndeny short.test\n"

// TestApprovalByOwner: the owner's approval (over the control socket, the
// kernel naming them) opens exactly the name and its answer's addresses
// on the approved ports; other names stay refused, other ports of the
// address dropped; another user's approval and one of a deny line are
// refused.
func TestApprovalByOwner(t *testing.T) {
	u := testutil.RequireUser(t)
	w := newPolicyWorld(t, approveConf, 0)
	a := ownedNamespace(u.Uid)
	w.up(a)
	w.dialControl().Close()
	if rcode, _ := w.resolve(a, "evil.test"); rcode != "REFUSED" {
		t.Fatalf("evil.test before any approval: %s, want REFUSED", rcode)
	}

	want := fmt.Sprintf("uid %d is not an owner of namespace %s: its owner is the user of a namespace NAME-UID, or one an approvers line of netns-firewall.conf names (a user, or a group of theirs)", strangerUid, a)
	if rep := w.ask(strangerUid, netctl.Request{Op: netctl.OpAllow, Namespace: a, Name: "evil.test", Scope: netctl.ScopeAlways}); rep.Error != want {
		t.Fatalf("another user's approval: %q, want %q", rep.Error, want)
	}
	if rcode, _ := w.resolve(a, "evil.test"); rcode != "REFUSED" {
		t.Fatalf("evil.test after another user's approval: %s, want REFUSED", rcode)
	}
	want = fmt.Sprintf("short.test is denied in namespace %s (deny lines of netns-firewall.conf): no approval can open it", a)
	if rep := w.ask(u.Uid, netctl.Request{Op: netctl.OpAllow, Namespace: a, Name: "short.test", Scope: netctl.ScopeAlways}); rep.Error != want {
		t.Fatalf("approval of a denied name: %q, want %q", rep.Error, want)
	}
	if rcode, _ := w.resolve(a, "short.test"); rcode != "REFUSED" {
		t.Fatalf("a denied name after its approval was refused: %s, want REFUSED", rcode)
	}

	if rep := w.ask(u.Uid, netctl.Request{Op: netctl.OpAllow, Namespace: a, Name: "evil.test", Scope: netctl.ScopeAlways, Ports: []string{"tcp 80"}}); rep.Error != "" {
		t.Fatalf("the owner's approval: %s", rep.Error)
	}
	if got := w.mustResolve(a, "evil.test"); strings.Join(got, " ") != evilIP {
		t.Fatalf("evil.test after the approval = %v, want %s", got, evilIP)
	}
	if got := dial(t, a, "tcp4", evilIP+":80"); got != "ok" {
		t.Fatalf("the approved port of the answer's address: %s, want ok", got)
	}
	if got := dial(t, a, "tcp4", evilIP+":443"); got != "no route to host" {
		t.Fatalf("another port of the approved address: %s, want no route to host", got)
	}
	if got := dial(t, a, "udp4", evilIP+":80"); got != "no route to host" {
		t.Fatalf("udp 80 of the approved address: %s, want no route to host", got)
	}
	for _, name := range []string{"wild.test", "x.evil.test"} {
		if rcode, _ := w.resolve(a, name); rcode != "REFUSED" {
			t.Fatalf("%s after approving evil.test: %s, want REFUSED", name, rcode)
		}
	}
	list := w.ask(u.Uid, netctl.Request{Op: netctl.OpList, Namespace: a}).Allowances
	if len(list) != 2 || list[0].Pattern != "allowed.test" || !strings.HasPrefix(list[0].Source, "config ") || list[1].Pattern != "evil.test" || list[1].Source != "approval" || list[1].By != u.Uid {
		t.Fatalf("list = %+v, want allowed.test from the config and evil.test approved by %d", list, u.Uid)
	}
}

// TestApprovalByGroup: with approvers @GID, a user in that group (as the
// kernel knows it) approves for the shared namespace; the same user
// outside the group is refused.
func TestApprovalByGroup(t *testing.T) {
	testutil.RequireCommand(t, "setpriv")
	w := newPolicyWorld(t, approveConf+"approvers @4711\n", 0)
	a := testutil.UniqueName("ag", 6)
	w.up(a)
	w.dialControl().Close()
	req := netctl.Request{Op: netctl.OpAllow, Namespace: a, Name: "evil.test", Scope: netctl.ScopeAlways}
	out := w.asUserInGroups(strangerUid, []uint32{100}, netctlSpec{Socket: w.control, Request: &req})
	want := fmt.Sprintf("uid %d is not an owner of namespace %s: its owner is the user of a namespace NAME-UID, or one an approvers line of netns-firewall.conf names (a user, or a group of theirs)", strangerUid, a)
	if out.Reply.Error != want {
		t.Fatalf("allow outside the group: %+v, want %q", out, want)
	}
	if out := w.asUserInGroups(strangerUid, []uint32{100, 4711}, netctlSpec{Socket: w.control, Request: &req}); out.DialErr != "" || out.Reply.Error != "" {
		t.Fatalf("allow in the group: %+v, want it taken", out)
	}
	if got := w.mustResolve(a, "evil.test"); strings.Join(got, " ") != evilIP {
		t.Fatalf("evil.test after the group's approval = %v, want %s", got, evilIP)
	}
}

// TestApprovalAlwaysSurvivesRestart: an always approval is in netns-dns's
// state directory and holds after a restart.
func TestApprovalAlwaysSurvivesRestart(t *testing.T) {
	w := newPolicyWorld(t, approveConf, 0)
	a := ownedNamespace(4321)
	w.up(a)
	c := w.dialControl()
	if _, err := c.Do(netctl.Request{Op: netctl.OpAllow, Namespace: a, Name: "evil.test", Scope: netctl.ScopeAlways}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	w.stopDNS()
	w.startDNS()
	w.dialControl().Close()
	// The new netns-dns needs the namespace's sockets, which guard (not
	// running here) or an up hands it.
	w.mustSetup("up", a)
	if got := w.mustResolve(a, "evil.test"); strings.Join(got, " ") != evilIP {
		t.Fatalf("evil.test after a restart = %v, want %s", got, evilIP)
	}
	if got := dial(t, a, "tcp4", evilIP+":80"); got != "ok" {
		t.Fatalf("evil.test:80 after a restart: %s, want ok", got)
	}
}

// TestHeldQuery: with an owner watching, a refused query is held; an
// approval answers it, and without one it is refused when the hold ends.
func TestHeldQuery(t *testing.T) {
	w := newPolicyWorld(t, approveConf+"hold 2s\n", 0)
	a := ownedNamespace(4321)
	w.up(a)
	events := w.watchEvents(a)

	type result struct {
		rcode string
		addrs []string
		err   error
	}
	ask := func(name string) <-chan result {
		ch := make(chan result, 1)
		go func() {
			q := new(dns.Msg)
			q.SetQuestion(dns.Fqdn(name), dns.TypeA)
			var resp *dns.Msg
			err := inNetns(a, func() (err error) {
				c := &dns.Client{Timeout: time.Minute}
				resp, _, err = c.Exchange(q, gateway+":53")
				return err
			})
			var r result
			if r.err = err; err == nil {
				r.rcode = dns.RcodeToString[resp.Rcode]
				for _, rr := range resp.Answer {
					if a, ok := rr.(*dns.A); ok {
						r.addrs = append(r.addrs, a.A.String())
					}
				}
			}
			ch <- r
		}()
		return ch
	}

	answered := ask("evil.test")
	waitEvent(t, events, netctl.EventHeld, "evil.test")
	c := w.dialControl()
	rep, err := c.Do(netctl.Request{Op: netctl.OpAllow, Namespace: a, Name: "evil.test", Scope: netctl.ScopeOnce})
	c.Close()
	if err != nil || rep.Held != 1 {
		t.Fatalf("allow during the hold: %+v, %v; want 1 held query answered", rep, err)
	}
	if r := <-answered; r.err != nil || r.rcode != "NOERROR" || strings.Join(r.addrs, " ") != evilIP {
		t.Fatalf("the held query after the approval: %+v, want NOERROR %s", r, evilIP)
	}
	if got := dial(t, a, "tcp4", evilIP+":80"); got != "ok" {
		t.Fatalf("evil.test:80 after the approval: %s, want ok", got)
	}

	refused := ask("wild.test")
	waitEvent(t, events, netctl.EventHeld, "wild.test")
	if e := waitEvent(t, events, netctl.EventReleased, "wild.test"); e.Answered {
		t.Fatalf("released %+v, want not answered", e)
	}
	if r := <-refused; r.err != nil || r.rcode != "REFUSED" {
		t.Fatalf("the held query after its hold: %+v, want REFUSED", r)
	}
	if log := w.waitDenial(a, "refused A wild.test"); !strings.Contains(log, "refused A wild.test: allow with: domain wild.test") {
		t.Fatalf("denial log after the hold:\n%s", log)
	}
}

// TestControlSocketFromTheSandbox: the control socket answers the owner
// on the host, and from inside the namespace there is no way to it: its
// path is not in the namespace's view of unix sockets, and no abstract
// name leads to it.
func TestControlSocketFromTheSandbox(t *testing.T) {
	u := testutil.RequireUser(t)
	w := newPolicyWorld(t, approveConf, 0)
	a := ownedNamespace(u.Uid)
	w.up(a)
	w.dialControl().Close()
	abstract := []string{netctl.SocketPath, w.control, "netns-dns", "netns-dns/control.sock"}
	host := w.asUser(u.Uid, "", netctlSpec{Socket: w.control, Request: &netctl.Request{Op: netctl.OpOwned}, Abstract: abstract})
	if host.DialErr != "" || strings.Join(host.Reply.Namespaces, " ") != a {
		t.Fatalf("the owner on the host: %+v, want namespaces [%s]", host, a)
	}
	// (The path is the host's file system here: what keeps the sandbox
	// from it is its own mounts, checked below.)
	in := w.asUser(u.Uid, a, netctlSpec{Socket: "/nonexistent", Abstract: abstract})
	for _, name := range abstract {
		if got := in.Abstract[name]; got != "connection refused" {
			t.Errorf("abstract name @%s inside the namespace: %s, want connection refused", name, got)
		}
	}
	for _, line := range strings.Split(in.ProcNetUnix, "\n") {
		if strings.Contains(line, "control.sock") || strings.Contains(line, "netns-dns") {
			t.Errorf("/proc/net/unix inside the namespace shows %q", line)
		}
	}

	// In the launcher's sandbox, /run is its own: netns-dns's directory is
	// not there, nor is /run/netns, which the host has (the test's
	// namespaces are in it).
	if _, err := os.Stat("/run/netns"); err != nil {
		t.Fatalf("the host's /run/netns: %v", err)
	}
	s := testutil.NewSandbox(t)
	r := s.Shell(t, "ls -d /run/netns-dns /run/netns 2>&1; exit 0")
	want := "ls: cannot access '/run/netns-dns': No such file or directory\nls: cannot access '/run/netns': No such file or directory"
	if strings.TrimSpace(r.Stdout) != want {
		t.Fatalf("/run/netns-dns and /run/netns in the sandbox: %s, want %q", r, want)
	}
}

// TestThousandHeldQueries: 1,000 held queries (distinct names, as an
// agent's tool would send while the user is away) keep netns-dns's memory
// small: a held query is a parked message, not a goroutine.
func TestThousandHeldQueries(t *testing.T) {
	const n, batch = 1000, 50
	w := newPolicyWorld(t, approveConf+"hold 60s\n", 0)
	a := ownedNamespace(4321)
	w.up(a)
	events := w.watchEvents(a)
	var conn net.Conn
	if err := inNetns(a, func() (err error) { conn, err = net.Dial("udp4", gateway+":53"); return err }); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	held := 0
	for i := 0; i < n; i += batch {
		for j := i; j < i+batch; j++ {
			q := new(dns.Msg)
			q.SetQuestion(fmt.Sprintf("n%d.held.test.", j), dns.TypeA)
			q.Id = uint16(j)
			b, _ := q.Pack()
			if _, err := conn.Write(b); err != nil {
				t.Fatal(err)
			}
		}
		// The batch is held before the next is sent (a reader drops what
		// comes while 64 of its queries are being answered).
		for held < i+batch {
			select {
			case e := <-events:
				if e.Kind == netctl.EventHeld && strings.HasSuffix(e.Name, ".held.test") {
					held++
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("%d queries held, want %d", held, i+batch)
			}
		}
	}
	if kib := rssKiB(t, w.dnsPid); kib >= 64<<10 {
		t.Fatalf("netns-dns holding %d queries: RSS %d KiB, want under 64 MiB", held, kib)
	} else {
		t.Logf("netns-dns holding %d queries: RSS %d KiB", held, kib)
	}
}

// TestApprovedFlowInside: an approved name's flow is pinned in the table
// inside the namespace too, so it holds with the host's tables gone (and
// nothing else opens); a revoke takes it out there as well.
func TestApprovedFlowInside(t *testing.T) {
	w := newPolicyWorld(t, approveConf, 0)
	a := ownedNamespace(4321)
	w.up(a)
	w.setForward("1")
	ip(t, "-n", w.inet, "route", "add", "10.10.0.0/16", "via", inetHost)
	c := w.dialControl()
	defer c.Close()
	if _, err := c.Do(netctl.Request{Op: netctl.OpAllow, Namespace: a, Name: "evil.test", Scope: netctl.ScopeAlways}); err != nil {
		t.Fatal(err)
	}
	if got := w.mustResolve(a, "evil.test"); strings.Join(got, " ") != evilIP {
		t.Fatalf("evil.test after the approval = %v, want %s", got, evilIP)
	}
	flow := evilIP + " . tcp . 80"
	if set := testutil.InNetns(t, a, "nft", "list", "set", "inet", nft.InsideTable, nft.ApprovedSet); !strings.Contains(set, flow) {
		t.Fatalf("the approved set inside %s lacks %s:\n%s", a, flow, set)
	}
	testutil.InNetns(t, w.host, "nft", "flush", "ruleset")
	if got := dial(t, a, "tcp4", evilIP+":80"); got != "ok" {
		t.Errorf("approved %s:80 without the host's tables: %s, want ok", evilIP, got)
	}
	if got := dial(t, a, "tcp4", allowedIP+":80"); got != "no route to host" {
		t.Errorf("unpinned %s:80 without the host's tables: %s, want no route to host", allowedIP, got)
	}
	if _, err := c.Do(netctl.Request{Op: netctl.OpRevoke, Namespace: a, Name: "evil.test"}); err != nil {
		t.Fatal(err)
	}
	if set := testutil.InNetns(t, a, "nft", "list", "set", "inet", nft.InsideTable, nft.ApprovedSet); strings.Contains(set, flow) {
		t.Errorf("the approved set inside %s still holds %s after the revoke:\n%s", a, flow, set)
	}
}

// TestApprovedFlowsEndAfterRestart: which approval opened a flow lives in
// netns-dns's memory, so a netns-dns that takes a namespace over (here:
// a restart, then guard handing it the sockets) empties its approved sets.
// Before, an always approval revoked after a restart, and a session one
// whose session ended with the old process, left their flows open: the
// sandbox reached the address by IP for up to the pins' timeout.
func TestApprovedFlowsEndAfterRestart(t *testing.T) {
	for _, scope := range []string{netctl.ScopeAlways, netctl.ScopeSession} {
		t.Run(scope, func(t *testing.T) {
			w := newPolicyWorld(t, approveConf, 0)
			a := ownedNamespace(4321)
			w.up(a)
			c := w.dialControl()
			if scope == netctl.ScopeSession {
				if _, err := c.Do(netctl.Request{Op: netctl.OpSession, Namespace: a}); err != nil {
					t.Fatal(err)
				}
			}
			ctl := w.dialControl()
			if _, err := ctl.Do(netctl.Request{Op: netctl.OpAllow, Namespace: a, Name: "evil.test", Scope: scope}); err != nil {
				t.Fatal(err)
			}
			ctl.Close()
			if got := w.mustResolve(a, "evil.test"); strings.Join(got, " ") != evilIP {
				t.Fatalf("evil.test = %v, want %s", got, evilIP)
			}
			if got := dial(t, a, "tcp4", evilIP+":80"); got != "ok" {
				t.Fatalf("evil.test:80 approved: %s, want ok", got)
			}
			// guard hands the new netns-dns the sockets without
			// rebuilding the tables (up would, and empty the sets).
			guard := w.setupCmd("guard", a)
			if err := guard.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				guard.Process.Signal(syscall.SIGTERM)
				guard.Wait()
			})
			w.stopDNS()
			c.Close() // the session ends with the old netns-dns
			w.startDNS()
			w.dialControl().Close()
			rcode := ""
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				if rcode, _ = w.resolve(a, "allowed.test"); rcode == "NOERROR" {
					break
				}
			}
			if rcode != "NOERROR" {
				t.Fatalf("allowed.test after the restart under guard: %s, want NOERROR (guard hands the sockets over)", rcode)
			}
			if scope == netctl.ScopeAlways {
				if rep := w.ask(0, netctl.Request{Op: netctl.OpRevoke, Namespace: a, Name: "evil.test"}); rep.Error != "" && !strings.HasPrefix(rep.Error, "no approval") {
					t.Fatalf("revoke after the restart: %s", rep.Error)
				}
			}
			if got := dial(t, a, "tcp4", evilIP+":80"); got == "ok" {
				t.Fatalf("%s by IP after restart and %s: %s, want it unreachable", evilIP, map[string]string{netctl.ScopeAlways: "revoke", netctl.ScopeSession: "the session's end"}[scope], got)
			}
		})
	}
}
