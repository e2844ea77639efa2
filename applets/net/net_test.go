package net

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/netctl"
	"github.com/claude-sandbox/claude-sandbox/internal/netctl/netctltest"
)

// now is the tests' clock; times print in UTC.
var now = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

func init() { time.Local = time.UTC }

// testWorld is user 1000 with base namespace agents, against srv.
func testWorld(srv *netctltest.Server) world {
	return world{socket: srv.Path, uid: 1000, getenv: func(k string) string {
		if k == "CLAUDE_SBX_NETNS" {
			return "agents"
		}
		return ""
	}, now: func() time.Time { return now }}
}

// runNet runs the applet in w and returns stdout and the error.
func runNet(t *testing.T, w world, args ...string) (string, error) {
	t.Helper()
	var out, errw bytes.Buffer
	err := w.run(context.Background(), args, multicall.Stdio{In: strings.NewReader(""), Out: &out, Err: &errw})
	if errw.Len() > 0 {
		t.Errorf("net %q wrote to stderr: %q", args, errw.String())
	}
	return out.String(), err
}

// hostile is a name from the network that would retitle the terminal and
// forge a line if printed raw.
const hostile = "\x1b]0;pwned\x07x\nclaude: all good.example.com"

func TestDenials(t *testing.T) {
	srv := netctltest.New(t)
	srv.Reply(netctl.OpOwned, netctl.Reply{Namespaces: []string{"agents-1000", "shared"}})
	at := func(m int) time.Time { return now.Add(time.Duration(m) * time.Minute) }
	mine := netctl.Reply{Denials: []netctl.Denial{
		{Time: at(-5), Namespace: "agents-1000", Name: "pypi.org", Type: "A", Count: 3, Approvable: true},
		{Time: at(-4), Namespace: "agents-1000", Name: hostile, Type: "A", Count: 1, Approvable: true},
		{Time: at(-3), Namespace: "agents-1000", Name: "$(touch x).example.com", Type: "A", Count: 1, Approvable: true},
		{Time: at(-2), Namespace: "agents-1000", Name: "evil.example.com", Type: "TXT", Count: 2},
		{Time: at(-1), Namespace: "agents-1000", Drop: "tcp 203.0.113.7:22", Count: 1},
	}}
	srv.Handle(netctl.OpDenials, func(r netctl.Request) netctl.Reply {
		if r.Namespace == "agents-1000" {
			return mine
		}
		return netctl.Reply{}
	})
	out, err := runNet(t, testWorld(srv), "denials", "--since", "1h")
	if err != nil {
		t.Fatal(err)
	}
	want := "2026-12-02 09:55:00  agents-1000  refused A pypi.org (3 times): claude-sandbox net allow pypi.org --session\n" +
		`2026-12-02 09:56:00  agents-1000  refused A "\x1b]0;pwned\ax\nclaude: all good.example.com" (1 time): no domain line can allow this name` + "\n" +
		"2026-12-02 09:57:00  agents-1000  refused A $(touch x).example.com (1 time): no domain line can allow this name\n" +
		"2026-12-02 09:58:00  agents-1000  refused TXT evil.example.com (2 times): the admin's settings forbid it (a deny line, or user-approve no, in netns-firewall.conf)\n" +
		"2026-12-02 09:59:00  agents-1000  dropped tcp 203.0.113.7:22 (1 time): an address, not a name: only the admin can allow it (an allow line in netns-firewall.conf)\n"
	if out != want {
		t.Errorf("net denials:\n%s\nwant:\n%s", out, want)
	}
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("net denials printed control bytes: %q", out)
	}
	var asked []string
	for _, r := range srv.Requests() {
		if r.Op == netctl.OpDenials {
			asked = append(asked, r.Namespace)
			if !r.Since.Equal(now.Add(-time.Hour)) {
				t.Errorf("denials request since %v, want %v", r.Since, now.Add(-time.Hour))
			}
		}
	}
	if !slices.Equal(asked, []string{"agents-1000", "shared"}) {
		t.Errorf("denials asked of %q, want both namespaces of the user", asked)
	}
}

func TestDenialsOtherNamespaceNamed(t *testing.T) {
	srv := netctltest.New(t)
	srv.Reply(netctl.OpOwned, netctl.Reply{Namespaces: []string{"agents-1000", "shared"}})
	srv.Reply(netctl.OpDenials, netctl.Reply{Denials: []netctl.Denial{
		{Time: now, Namespace: "shared", Name: "pypi.org", Type: "A", Count: 1, Approvable: true},
	}})
	out, err := runNet(t, testWorld(srv), "denials", "shared")
	if err != nil {
		t.Fatal(err)
	}
	want := "2026-12-02 10:00:00  shared  refused A pypi.org (1 time): claude-sandbox net allow pypi.org --session --namespace shared\n"
	if out != want {
		t.Errorf("net denials shared = %q, want %q", out, want)
	}
	for _, r := range srv.Requests() {
		if r.Op == netctl.OpDenials && (r.Namespace != "shared" || !r.Since.IsZero()) {
			t.Errorf("request %+v, want namespace shared and no since", r)
		}
	}
}

func TestDenialsJSON(t *testing.T) {
	srv := netctltest.New(t)
	srv.Reply(netctl.OpOwned, netctl.Reply{Namespaces: []string{"agents"}})
	srv.Reply(netctl.OpDenials, netctl.Reply{Denials: []netctl.Denial{
		{Time: now, Namespace: "agents", Name: "pypi.org", Type: "A", Count: 3, Approvable: true},
		{Time: now, Namespace: "agents", Name: "evil.example.com", Type: "A", Count: 1},
	}})
	out, err := runNet(t, testWorld(srv), "denials", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got map[string][]map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("net denials --json: %v\n%s", err, out)
	}
	want := map[string][]map[string]any{"denials": {
		{"time": "2026-12-02T10:00:00Z", "namespace": "agents", "name": "pypi.org", "type": "A", "count": 3.0, "approvable": true,
			"allow": "claude-sandbox net allow pypi.org --session"},
		{"time": "2026-12-02T10:00:00Z", "namespace": "agents", "name": "evil.example.com", "type": "A", "count": 1.0, "approvable": false,
			"why": netctl.WhyNotYours},
	}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("net denials --json (-want +got):\n%s", d)
	}
	// No denial is an empty list, not null.
	srv.Reply(netctl.OpDenials, netctl.Reply{})
	if out, _ := runNet(t, testWorld(srv), "denials", "--json"); strings.TrimSpace(out) != "{\n  \"denials\": []\n}" {
		t.Errorf("net denials --json without denials = %q", out)
	}
}

func TestAllow(t *testing.T) {
	for _, tc := range []struct {
		name  string
		owned []string
		args  []string
		want  netctl.Request
		out   string
	}{
		{"default scope once, own namespace", []string{"agents-1000", "agents"}, []string{"allow", "pypi.org"},
			netctl.Request{Op: netctl.OpAllow, Namespace: "agents-1000", Name: "pypi.org", Scope: netctl.ScopeOnce},
			"allowed pypi.org in agents-1000 once (its held queries, or its next query within a minute), answering 2 held queries\n"},
		{"session, base namespace", []string{"agents"}, []string{"allow", "pypi.org", "--session"},
			netctl.Request{Op: netctl.OpAllow, Namespace: "agents", Name: "pypi.org", Scope: netctl.ScopeSession},
			"allowed pypi.org in agents until the running sessions end, answering 2 held queries\n"},
		{"always with ports", nil, []string{"allow", "*.example.com", "--always", "--port", "tcp", "22", "--port", "udp", "3478-3479"},
			netctl.Request{Op: netctl.OpAllow, Namespace: "agents", Name: "*.example.com", Scope: netctl.ScopeAlways, Ports: []string{"tcp 22", "udp 3478-3479"}},
			"allowed *.example.com in agents until revoked on tcp 22, udp 3478-3479, answering 2 held queries\n"},
		{"namespace named", nil, []string{"allow", "pypi.org", "--once", "--namespace", "shared"},
			netctl.Request{Op: netctl.OpAllow, Namespace: "shared", Name: "pypi.org", Scope: netctl.ScopeOnce},
			"allowed pypi.org in shared once (its held queries, or its next query within a minute), answering 2 held queries\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := netctltest.New(t)
			srv.Reply(netctl.OpOwned, netctl.Reply{Namespaces: tc.owned})
			srv.Reply(netctl.OpAllow, netctl.Reply{Held: 2})
			out, err := runNet(t, testWorld(srv), tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if out != tc.out {
				t.Errorf("net %q = %q, want %q", tc.args, out, tc.out)
			}
			reqs := srv.Requests()
			if d := cmp.Diff(tc.want, reqs[len(reqs)-1]); d != "" {
				t.Errorf("net %q sent (-want +got):\n%s", tc.args, d)
			}
		})
	}
}

func TestAllowJSON(t *testing.T) {
	srv := netctltest.New(t)
	srv.Reply(netctl.OpAllow, netctl.Reply{Held: 1})
	out, err := runNet(t, testWorld(srv), "allow", "pypi.org", "--always", "--namespace", "agents", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"namespace": "agents", "name": "pypi.org", "scope": "always", "ports": []any{}, "held": 1.0}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("net allow --json (-want +got):\n%s", d)
	}
}

// TestErrors: each failure is one line that names what failed and what to
// do; netns-dns's refusals are its message, quoted if unsafe.
func TestErrors(t *testing.T) {
	srv := netctltest.New(t)
	srv.Reply(netctl.OpOwned, netctl.Reply{Namespaces: []string{"agents-1000"}})
	srv.Reply(netctl.OpAllow, netctl.Reply{Error: "no session of agents-1000 is running: start claude in it first, or allow --once or --always"})
	srv.Reply(netctl.OpRevoke, netctl.Reply{Error: "namespace agents-1001 is not yours (uid 1000)"})
	srv.Reply(netctl.OpList, netctl.Reply{Error: "bad \x1b[2J name"})
	missing := testWorld(srv)
	missing.socket = filepath.Join(t.TempDir(), "control.sock")
	for _, tc := range []struct {
		name string
		w    world
		args []string
		want string
		code int
	}{
		{"socket missing", missing, []string{"list"},
			"netns-dns's control socket " + missing.socket + " is not there: netns-dns is not running, or is older than this command: sudo systemctl restart netns-dns", 1},
		{"session refused", testWorld(srv), []string{"allow", "pypi.org", "--session"},
			"allow pypi.org in agents-1000: netns-dns refused allow: no session of agents-1000 is running: start claude in it first, or allow --once or --always", 1},
		{"not your namespace", testWorld(srv), []string{"revoke", "pypi.org", "--namespace", "agents-1001"},
			"revoke pypi.org in agents-1001: netns-dns refused revoke: namespace agents-1001 is not yours (uid 1000)", 1},
		{"unsafe message", testWorld(srv), []string{"list"},
			`list agents-1000: netns-dns refused list: "bad \x1b[2J name"`, 1},
		{"bad namespace", testWorld(srv), []string{"list", "--namespace", "../x"},
			`namespace: invalid namespace name "../x": use 1 to 15 characters of a-z, 0-9, '-' or '_', starting with a letter or digit`, 2},
		{"bad port", testWorld(srv), []string{"allow", "pypi.org", "--port", "icmp", "1"},
			"--port icmp 1: want tcp PORT or udp PORT", 1},
		{"two scopes", testWorld(srv), []string{"allow", "pypi.org", "--once", "--always"},
			"--once and --always can't be used together (see --help)", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runNet(t, tc.w, tc.args...)
			if got := multicall.Message(err); got != tc.want {
				t.Errorf("net %q: error %q, want %q", tc.args, got, tc.want)
			}
			if got := multicall.Code(err); got != tc.code {
				t.Errorf("net %q: exit %d, want %d", tc.args, got, tc.code)
			}
		})
	}
}

func TestRevoke(t *testing.T) {
	srv := netctltest.New(t)
	srv.Reply(netctl.OpOwned, netctl.Reply{Namespaces: []string{"agents-1000"}})
	out, err := runNet(t, testWorld(srv), "revoke", "pypi.org")
	if err != nil {
		t.Fatal(err)
	}
	if out != "revoked pypi.org in agents-1000\n" {
		t.Errorf("net revoke = %q", out)
	}
	want := []netctl.Request{{Op: netctl.OpOwned}, {Op: netctl.OpRevoke, Namespace: "agents-1000", Name: "pypi.org"}}
	if d := cmp.Diff(want, srv.Requests()); d != "" {
		t.Errorf("requests (-want +got):\n%s", d)
	}
	out, err = runNet(t, testWorld(srv), "revoke", "pypi.org", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if out != "{\n  \"namespace\": \"agents-1000\",\n  \"name\": \"pypi.org\"\n}\n" {
		t.Errorf("net revoke --json = %q", out)
	}
}

func TestList(t *testing.T) {
	srv := netctltest.New(t)
	srv.Reply(netctl.OpOwned, netctl.Reply{Namespaces: []string{"agents-1000"}})
	list := []netctl.Allowance{
		{Pattern: "api.anthropic.com", Ports: []string{"tcp 443"}, Source: "preset anthropic"},
		{Pattern: "*.github.com", Source: "config /usr/local/etc/netns-firewall.conf:12"},
		{Pattern: "pypi.org", Ports: []string{"tcp 443"}, Source: "approval", Scope: "session", By: 1000},
		{Pattern: "files.pythonhosted.org", Ports: []string{"tcp 443"}, Source: "approval", Scope: "once", By: 1000, Until: now.Add(time.Minute)},
		{Pattern: hostile, Source: "approval", Scope: "always"},
	}
	srv.Reply(netctl.OpList, netctl.Reply{Allowances: list})
	out, err := runNet(t, testWorld(srv), "list")
	if err != nil {
		t.Fatal(err)
	}
	want := "api.anthropic.com  tcp 443  preset anthropic\n" +
		"*.github.com  tcp 80, tcp 443  config /usr/local/etc/netns-firewall.conf:12\n" +
		"pypi.org  tcp 443  approval session by uid 1000\n" +
		"files.pythonhosted.org  tcp 443  approval once by uid 1000 until 2026-12-02 10:01:00\n" +
		`"\x1b]0;pwned\ax\nclaude: all good.example.com"  tcp 80, tcp 443  approval always by root` + "\n"
	if out != want {
		t.Errorf("net list:\n%s\nwant:\n%s", out, want)
	}
	out, err = runNet(t, testWorld(srv), "list", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Namespace  string             `json:"namespace"`
		Allowances []netctl.Allowance `json:"allowances"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Namespace != "agents-1000" || !cmp.Equal(got.Allowances, list) {
		t.Errorf("net list --json = %s", out)
	}
}

// watchLines runs net watch in line mode (stdin a pipe) and returns what
// feeds it, its output so far, and its end.
type lineWatch struct {
	in   *io.PipeWriter
	out  *syncBuffer
	done chan error
	// later: how far net watch's clock is past now.
	later atomic.Int64
}

// advance moves net watch's clock on by d.
func (lw *lineWatch) advance(d time.Duration) { lw.later.Add(int64(d)) }

type syncBuffer struct {
	mu  chan struct{}
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu <- struct{}{}
	defer func() { <-b.mu }()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu <- struct{}{}
	defer func() { <-b.mu }()
	return b.buf.String()
}

func startLineWatch(t *testing.T, srv *netctltest.Server, args ...string) *lineWatch {
	t.Helper()
	r, wr := io.Pipe()
	lw := &lineWatch{in: wr, out: &syncBuffer{mu: make(chan struct{}, 1)}, done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	w := testWorld(srv)
	w.now = func() time.Time { return now.Add(time.Duration(lw.later.Load())) }
	go func() {
		lw.done <- w.run(ctx, append([]string{"watch"}, args...), multicall.Stdio{In: r, Out: lw.out, Err: io.Discard})
	}()
	t.Cleanup(func() {
		cancel()
		wr.Close()
		<-lw.done
	})
	if !srv.WaitStreams(1, lw.doneChan()) {
		t.Fatalf("net watch ended: %v", <-lw.done)
	}
	return lw
}

func (lw *lineWatch) doneChan() <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		err := <-lw.done
		lw.done <- err
		close(ch)
	}()
	return ch
}

// waitOutput waits until the output holds s.
func (lw *lineWatch) waitOutput(t *testing.T, s string) {
	t.Helper()
	give := time.After(10 * time.Second) // a guard against a hang, not a measure
	for !strings.Contains(lw.out.String(), s) {
		select {
		case err := <-lw.done:
			lw.done <- err
			t.Fatalf("net watch ended (%v) before printing %q:\n%s", err, s, lw.out.String())
		case <-give:
			t.Fatalf("net watch did not print %q; it printed:\n%s", s, lw.out.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestWatchLineNeedsANameOfSeveral: in line mode, with two names held, a
// key without a name answers neither (the sandbox could have put another
// name first the moment the user read the list) and says so.
func TestWatchLineNeedsANameOfSeveral(t *testing.T) {
	srv := netctltest.New(t)
	lw := startLineWatch(t, srv)
	srv.Emit(netctl.Event{Kind: netctl.EventHeld, Time: now, Namespace: "agents-1000", Name: "pypi.org", Type: "A", Until: now.Add(5 * time.Second)})
	srv.Emit(netctl.Event{Kind: netctl.EventHeld, Time: now, Namespace: "agents-1000", Name: "evil.example.com", Type: "A", Until: now.Add(6 * time.Second)})
	lw.waitOutput(t, "held agents-1000 A evil.example.com")
	io.WriteString(lw.in, "a\n")
	lw.waitOutput(t, "2 names are held: name one (a NAME)")
	for _, r := range srv.Requests() {
		if r.Op != netctl.OpWatch {
			t.Errorf("a key without a name of two held sent %+v", r)
		}
	}
}

// TestWatchKeys: each key answers the one held name (or the one named) with the scope it
// stands for (d: a revoke, which releases the hold refused), and hostile
// names are printed quoted.
func TestWatchKeys(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want netctl.Request
	}{
		{"o", netctl.Request{Op: netctl.OpAllow, Namespace: "agents-1000", Name: "pypi.org", Scope: netctl.ScopeOnce}},
		{"s", netctl.Request{Op: netctl.OpAllow, Namespace: "agents-1000", Name: "pypi.org", Scope: netctl.ScopeSession}},
		{"a", netctl.Request{Op: netctl.OpAllow, Namespace: "agents-1000", Name: "pypi.org", Scope: netctl.ScopeAlways}},
		{"d", netctl.Request{Op: netctl.OpRevoke, Namespace: "agents-1000", Name: "pypi.org"}},
		{"a files.pythonhosted.org", netctl.Request{Op: netctl.OpAllow, Namespace: "agents-1000", Name: "files.pythonhosted.org", Scope: netctl.ScopeAlways}},
	} {
		t.Run(tc.key, func(t *testing.T) {
			srv := netctltest.New(t)
			lw := startLineWatch(t, srv)
			if reqs := srv.Requests(); !cmp.Equal(reqs, []netctl.Request{{Op: netctl.OpWatch}}) {
				t.Errorf("net watch asked %+v, want a watch of every namespace of the user", reqs)
			}
			srv.Emit(netctl.Event{Kind: netctl.EventRefused, Time: now, Namespace: "agents-1000", Name: hostile, Type: "A"})
			srv.Emit(netctl.Event{Kind: netctl.EventHeld, Time: now, Namespace: "agents-1000", Name: "pypi.org", Type: "A", Until: now.Add(5 * time.Second)})
			last := "held agents-1000 A pypi.org"
			if strings.Contains(tc.key, " ") { // a name: another one may be held too
				srv.Emit(netctl.Event{Kind: netctl.EventHeld, Time: now, Namespace: "agents-1000", Name: "files.pythonhosted.org", Type: "AAAA", Until: now.Add(6 * time.Second)})
				last = "held agents-1000 AAAA files.pythonhosted.org"
			}
			lw.waitOutput(t, last)
			lw.advance(time.Second)
			io.WriteString(lw.in, tc.key+"\n")
			got, ok := srv.WaitRequest(tc.want.Op, lw.doneChan())
			if !ok {
				t.Fatalf("no %s request; output:\n%s", tc.want.Op, lw.out.String())
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("key %q sent (-want +got):\n%s", tc.key, d)
			}
			out := lw.out.String()
			if strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(out, `refused agents-1000 A "\x1b]0;pwned\ax\nclaude: all good.example.com"`) {
				t.Errorf("net watch printed a hostile name unquoted:\n%q", out)
			}
		})
	}
}

// TestWatchNoServer: without netns-dns, watch says so and ends.
func TestWatchNoServer(t *testing.T) {
	srv := netctltest.New(t)
	w := testWorld(srv)
	w.socket = filepath.Join(t.TempDir(), "none.sock")
	_, err := runNet(t, w, "watch")
	var ee *multicall.ExitError
	if err == nil || errors.As(err, &ee) || !strings.Contains(err.Error(), "sudo systemctl restart netns-dns") {
		t.Errorf("net watch without netns-dns: %v", err)
	}
	_ = os.Remove(w.socket)
}

// TestWatchNamespace: --namespace watches that one namespace only.
func TestWatchNamespace(t *testing.T) {
	srv := netctltest.New(t)
	startLineWatch(t, srv, "--namespace", "shared")
	if reqs := srv.Requests(); !cmp.Equal(reqs, []netctl.Request{{Op: netctl.OpWatch, Namespace: "shared"}}) {
		t.Errorf("net watch --namespace shared asked %+v", reqs)
	}
}

// TestWatchSelectionNeverMovesToAnotherName performs the attack: every
// held name is the sandbox's query, and it knows when each hold ends. It
// asks a name the user wants (selected, the oldest), then its own; the
// first hold runs out just as the user presses a: the key must not answer
// the sandbox's name, which the screen never showed selected.
func TestWatchSelectionNeverMovesToAnotherName(t *testing.T) {
	held := func(name string) netctl.Event {
		return netctl.Event{Kind: netctl.EventHeld, Time: now, Namespace: "agents-1000", Name: name, Type: "A", Until: now.Add(4 * time.Second)}
	}
	b := &board{}
	b.apply(held("registry.npmjs.org"))
	b.apply(held("evil.example"))
	if h, ok := b.selected(); !ok || h.name != "registry.npmjs.org" {
		t.Fatalf("selected %+v %v, want the oldest, registry.npmjs.org", h, ok)
	}
	b.apply(netctl.Event{Kind: netctl.EventReleased, Time: now, Namespace: "agents-1000", Name: "registry.npmjs.org", Type: "A"})
	if h, ok := b.selected(); ok {
		t.Fatalf("after the selected name went, %s is selected: a key meant for the name shown would answer it", h.name)
	}
	if !slices.Contains(b.render(now), "the selected name has gone: j or k selects another") {
		t.Errorf("screen %q does not say that the selection went", b.render(now))
	}
	// j (or k) selects again, among what the screen shows.
	b.move(1)
	if h, ok := b.selected(); !ok || h.name != "evil.example" {
		t.Fatalf("after j: %+v %v, want evil.example", h, ok)
	}
	// A name before the selected one goes: the selection stays on its name.
	b.apply(held("third.example"))
	b.move(1)
	b.apply(netctl.Event{Kind: netctl.EventRefused, Time: now, Namespace: "agents-1000", Name: "evil.example", Type: "A"})
	if h, ok := b.selected(); !ok || h.name != "third.example" {
		t.Fatalf("after an earlier name went: %+v %v, want third.example still", h, ok)
	}
	// The expiry of a hold before it, too.
	b = &board{}
	b.apply(held("first.example"))
	b.apply(held("second.example"))
	b.move(1)
	b.held[0].until = now.Add(-time.Second)
	b.expire(now)
	if h, ok := b.selected(); !ok || h.name != "second.example" {
		t.Fatalf("after an earlier hold ran out: %+v %v, want second.example", h, ok)
	}
}

// TestWatchLineBareKeyNeedsASecond: in line mode a key without a name
// answers the one held name only once it was printed a second ago: the
// sandbox can look up another name the instant the one the user was
// reading runs out, and an "a" typed a moment late must not make that
// one an always approval.
func TestWatchLineBareKeyNeedsASecond(t *testing.T) {
	srv := netctltest.New(t)
	lw := startLineWatch(t, srv)
	srv.Emit(netctl.Event{Kind: netctl.EventHeld, Time: now, Namespace: "agents-1000", Name: "exfil.evil.test", Type: "A", Until: now.Add(5 * time.Second)})
	lw.waitOutput(t, "held agents-1000 A exfil.evil.test")
	lw.advance(400 * time.Millisecond)
	io.WriteString(lw.in, "a\n")
	lw.waitOutput(t, "exfil.evil.test was held less than a second ago: name it (a exfil.evil.test)")
	for _, r := range srv.Requests() {
		if r.Op != netctl.OpWatch {
			t.Errorf("a bare key 0.4 s after the name was printed sent %+v", r)
		}
	}
	lw.advance(600 * time.Millisecond)
	io.WriteString(lw.in, "a\n")
	if got, ok := srv.WaitRequest(netctl.OpAllow, lw.doneChan()); !ok || got.Name != "exfil.evil.test" {
		t.Fatalf("a bare key a second after: %+v (%v), want the allow of exfil.evil.test", got, ok)
	}
}
