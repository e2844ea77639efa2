package claude

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/claude-sandbox/claude-sandbox/internal/netctl"
	"github.com/claude-sandbox/claude-sandbox/internal/netctl/netctltest"
	"github.com/claude-sandbox/claude-sandbox/internal/sandbox"
)

// inNamespace is a launch that enters namespace ns.
func inNamespace(ns string) *sandbox.Launch {
	return &sandbox.Launch{NetnsEnter: []string{"/usr/local/bin/netns-enter", ns, "--"}}
}

// none finds no notify-send.
func none() string { return "" }

// TestNetSessionSummary: the session is opened for the namespace the
// sandbox enters; the summary lists at most maxSummary refused names of
// the session, oldest first, then a count, each with the command that
// allows it or why none can; drops are not names.
func TestNetSessionSummary(t *testing.T) {
	srv := netctltest.New(t)
	srv.Reply(netctl.OpOwned, netctl.Reply{Namespaces: []string{"agents-1000"}})
	base := time.Now()
	var list []netctl.Denial
	for i := 12; i >= 1; i-- {
		list = append(list, netctl.Denial{Time: base.Add(time.Duration(i) * time.Second), Namespace: "agents-1000",
			Name: fmt.Sprintf("host%d.example.com", i), Type: "A", Count: i, Approvable: true})
	}
	list = append(list,
		netctl.Denial{Time: base, Namespace: "agents-1000", Name: "evil.example.com", Type: "TXT", Count: 1},
		netctl.Denial{Time: base, Namespace: "agents-1000", Name: "\x1b[2Jx.example.com", Type: "A", Count: 1, Approvable: true},
		netctl.Denial{Time: base, Namespace: "agents-1000", Drop: "tcp 203.0.113.7:22", Count: 4},
	)
	srv.Reply(netctl.OpDenials, netctl.Reply{Denials: list})

	before := time.Now()
	s := openNetSession(inNamespace("agents-1000"), srv.Path, "agents", 1000, none, nil)
	if s == nil {
		t.Fatal("no session opened")
	}
	if !srv.WaitStreams(1, nil) {
		t.Fatal("no stream")
	}
	var out bytes.Buffer
	s.summary(&out)
	if srv.Streams() != 0 {
		t.Errorf("the session is still open after the summary")
	}
	want := `claude: netns-dns refused TXT evil.example.com (once): the admin's settings forbid it (a deny line, or user-approve no, in netns-firewall.conf)
claude: netns-dns refused A "\x1b[2Jx.example.com" (once): no domain line can allow this name
claude: netns-dns refused A host1.example.com (once): to allow it: claude-sandbox net allow host1.example.com --always
`
	for i := 2; i <= 8; i++ {
		want += fmt.Sprintf("claude: netns-dns refused A host%d.example.com (%d times): to allow it: claude-sandbox net allow host%d.example.com --always\n", i, i, i)
	}
	want += "claude: and 4 more refused names: claude-sandbox net denials agents-1000\n"
	if d := cmp.Diff(want, out.String()); d != "" {
		t.Errorf("summary (-want +got):\n%s", d)
	}
	reqs := srv.Requests()
	if reqs[0].Op != netctl.OpSession || reqs[0].Namespace != "agents-1000" {
		t.Errorf("first request %+v, want a session of agents-1000", reqs[0])
	}
	if reqs[1].Op != netctl.OpDenials || reqs[1].Namespace != "agents-1000" || reqs[1].Since.Before(before) || reqs[1].Since.After(time.Now()) {
		t.Errorf("denials request %+v, want agents-1000 since the session began", reqs[1])
	}
}

// TestNetSessionNamespaceNamed: a namespace that is not the net command's
// default for the user is named in the command.
func TestNetSessionNamespaceNamed(t *testing.T) {
	srv := netctltest.New(t)
	srv.Reply(netctl.OpOwned, netctl.Reply{Namespaces: []string{"agents-1000", "agents"}})
	srv.Reply(netctl.OpDenials, netctl.Reply{Denials: []netctl.Denial{{Time: time.Now(), Namespace: "agents", Name: "pypi.org", Count: 1, Approvable: true}}})
	var out bytes.Buffer
	openNetSession(inNamespace("agents"), srv.Path, "agents", 1000, none, nil).summary(&out)
	if want := "claude: netns-dns refused pypi.org (once): to allow it: claude-sandbox net allow pypi.org --always --namespace agents\n"; out.String() != want {
		t.Errorf("summary = %q, want %q", out.String(), want)
	}
}

// TestNetSessionNone: without a namespace, without netns-dns's socket, or
// when it refuses the session, there is no session and nothing is said.
func TestNetSessionNone(t *testing.T) {
	srv := netctltest.New(t)
	srv.Reply(netctl.OpDenials, netctl.Reply{Denials: []netctl.Denial{{Time: time.Now(), Namespace: "agents", Name: "pypi.org", Count: 1, Approvable: true}}})
	refusing := netctltest.New(t)
	refusing.Reply(netctl.OpSession, netctl.Reply{Error: "agents has no policy"})
	for _, tc := range []struct {
		name   string
		l      *sandbox.Launch
		socket string
	}{
		{"host network", &sandbox.Launch{}, srv.Path},
		{"no socket", inNamespace("agents"), filepath.Join(t.TempDir(), "control.sock")},
		{"refused", inNamespace("agents"), refusing.Path},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openNetSession(tc.l, tc.socket, "agents", 1000, none, nil)
			if s != nil {
				t.Errorf("a session was opened")
			}
			var out bytes.Buffer
			s.end()
			s.summary(&out)
			if out.Len() != 0 {
				t.Errorf("summary without a session wrote %q", out.String())
			}
		})
	}
	if len(srv.Requests()) != 0 {
		t.Errorf("the host network's launch asked netns-dns %+v", srv.Requests())
	}
}

// fakeNotifySend writes a notify-send to dir that records its arguments
// and where its stdin and stderr lead in marker, then prints key.
func fakeNotifySend(t *testing.T, dir, marker, key string) string {
	t.Helper()
	p := filepath.Join(dir, "notify-send")
	script := fmt.Sprintf("#!/bin/sh\n{ printf '%%s\\n' \"$@\"; readlink /proc/self/fd/0 /proc/self/fd/2; } >%s\necho %s\n", marker, key)
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestNetSessionNotifies: a held query of the session shows a
// notification with the four actions and the name quoted as text; the
// action chosen is the approval sent (deny: a revoke); notify-send has
// /dev/null, never the agent's terminal, and nothing is written until the
// summary.
func TestNetSessionNotifies(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want netctl.Request
	}{
		{"once", netctl.Request{Op: netctl.OpAllow, Namespace: "agents-1000", Name: "<b>x</b>.example.com", Scope: netctl.ScopeOnce}},
		{"session", netctl.Request{Op: netctl.OpAllow, Namespace: "agents-1000", Name: "<b>x</b>.example.com", Scope: netctl.ScopeSession}},
		{"always", netctl.Request{Op: netctl.OpAllow, Namespace: "agents-1000", Name: "<b>x</b>.example.com", Scope: netctl.ScopeAlways}},
		{"deny", netctl.Request{Op: netctl.OpRevoke, Namespace: "agents-1000", Name: "<b>x</b>.example.com"}},
	} {
		t.Run(tc.key, func(t *testing.T) {
			srv := netctltest.New(t)
			dir := t.TempDir()
			marker := filepath.Join(dir, "ran")
			ns := fakeNotifySend(t, dir, marker, tc.key)
			s := openNetSession(inNamespace("agents-1000"), srv.Path, "agents", 1000, func() string { return ns }, os.Environ())
			if s == nil || !srv.WaitStreams(1, nil) {
				t.Fatal("no session")
			}
			srv.Emit(netctl.Event{Kind: netctl.EventHeld, Time: time.Now(), Namespace: "agents-1000", Name: "<b>x</b>.example.com", Type: "A", Until: time.Now().Add(time.Minute)})
			got, _ := srv.WaitRequest(tc.want.Op, nil)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("action %s sent (-want +got):\n%s", tc.key, d)
			}
			var out bytes.Buffer
			s.summary(&out)
			b, err := os.ReadFile(marker)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			for _, want := range []string{"--wait", "--action=once=Allow once", "--action=session=Allow for this session", "--action=always=Always allow", "--action=deny=Deny", "--", "Allow &lt;b&gt;x&lt;/b&gt;.example.com?"} {
				if !strings.Contains(string(b), want+"\n") {
					t.Errorf("notify-send arguments lack %q:\n%s", want, b)
				}
			}
			if fds := lines[len(lines)-2:]; fds[0] != "/dev/null" || fds[1] != "/dev/null" {
				t.Errorf("notify-send's stdin and stderr are %q, want /dev/null", fds)
			}
		})
	}
}

// TestNotifySendTrusted: notify-send is run only from a system directory
// root owns: one planted earlier on PATH, or in a directory another user
// could write, is never run (its marker never appears), and without a
// session bus there is none.
func TestNotifySendTrusted(t *testing.T) {
	planted := t.TempDir()
	marker := filepath.Join(planted, "ran")
	fakeNotifySend(t, planted, marker, "always")
	// The planted directory is below /tmp, which everyone may write.
	t.Setenv("PATH", planted+":"+os.Getenv("PATH"))
	env := func(k string) string {
		if k == "DBUS_SESSION_BUS_ADDRESS" {
			return "unix:path=/run/user/1000/bus"
		}
		return os.Getenv(k)
	}
	if got := findNotifySend(env, []string{planted}); got != "" {
		t.Errorf("findNotifySend trusted %s, in a directory below /tmp", got)
	}
	got := findNotifySend(env, notifyDirs)
	if got != "" && filepath.Dir(got) != "/usr/bin" && filepath.Dir(got) != "/bin" {
		t.Errorf("findNotifySend = %q, want a system directory's or none", got)
	}
	if got := findNotifySend(func(string) string { return "" }, notifyDirs); got != "" {
		t.Errorf("findNotifySend without a session bus = %q", got)
	}
	srv := netctltest.New(t)
	s := openNetSession(inNamespace("agents-1000"), srv.Path, "agents", 1000, func() string { return findNotifySend(env, []string{planted}) }, os.Environ())
	if s == nil || !srv.WaitStreams(1, nil) {
		t.Fatal("no session")
	}
	srv.Emit(netctl.Event{Kind: netctl.EventHeld, Time: time.Now(), Namespace: "agents-1000", Name: "pypi.org", Until: time.Now().Add(time.Minute)})
	s.summary(new(bytes.Buffer))
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the planted notify-send ran")
	}
	for _, r := range srv.Requests() {
		if r.Op == netctl.OpAllow {
			t.Errorf("an approval was sent without a trusted notify-send: %+v", r)
		}
	}
}

// TestNotifySendNotSteeredByProject performs the attack: notify-send is a
// dynamic program run on the host while the sandbox runs, and the
// launcher's directory is the project, which the sandbox writes. With an
// LD_LIBRARY_PATH that has an empty entry (the current directory; what
// `export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/opt/lib` makes when it was
// unset), a library the sandbox put in the project would be loaded on the
// host. notify-send runs in /, without the variables that steer the
// loader, as the chain does.
func TestNotifySendNotSteeredByProject(t *testing.T) {
	srv := netctltest.New(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	p := filepath.Join(dir, "notify-send")
	script := fmt.Sprintf("#!/bin/sh\n{ pwd; env; } >%s\necho deny\n", marker)
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	project := t.TempDir()
	t.Chdir(project)
	env := append(os.Environ(), "LD_LIBRARY_PATH=:/opt/lib", "LD_PRELOAD=libfake.so", "GCONV_PATH=.", "DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus")
	s := openNetSession(inNamespace("agents-1000"), srv.Path, "agents", 1000, func() string { return p }, env)
	if s == nil || !srv.WaitStreams(1, nil) {
		t.Fatal("no session")
	}
	srv.Emit(netctl.Event{Kind: netctl.EventHeld, Time: time.Now(), Namespace: "agents-1000", Name: "x.example.com", Type: "A", Until: time.Now().Add(time.Minute)})
	srv.WaitRequest(netctl.OpRevoke, nil)
	s.summary(io.Discard)
	b, err := os.ReadFile(marker)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if lines[0] != "/" {
		t.Errorf("notify-send ran in %s, want /: the project steers what it loads", lines[0])
	}
	for _, l := range lines[1:] {
		if k, _, _ := strings.Cut(l, "="); strings.HasPrefix(k, "LD_") || k == "GCONV_PATH" {
			t.Errorf("notify-send's environment has %s", l)
		}
	}
	if !slices.Contains(lines, "DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus") {
		t.Errorf("notify-send lacks the session bus address:\n%s", b)
	}
}

// TestNetSessionAsksOnlyWithNotifySend: the session says it can ask only
// when it has a notify-send to ask with; without one netns-dns holds no
// query for it (nobody could answer, and each refused lookup would wait
// out the hold).
func TestNetSessionAsksOnlyWithNotifySend(t *testing.T) {
	for _, tc := range []struct {
		notify string
		want   bool
	}{{"", false}, {"/usr/bin/notify-send", true}} {
		srv := netctltest.New(t)
		s := openNetSession(inNamespace("agents-1000"), srv.Path, "agents", 1000, func() string { return tc.notify }, nil)
		if s == nil {
			t.Fatal("no session opened")
		}
		req, ok := srv.WaitRequest(netctl.OpSession, nil)
		if !ok || req.Asks != tc.want {
			t.Errorf("notify-send %q: session request %+v, want asks %v", tc.notify, req, tc.want)
		}
		s.summary(io.Discard)
		// The summary ends what is still held, so that it lists it.
		if req, ok := srv.WaitRequest(netctl.OpDenials, nil); !ok || !req.EndHolds || !req.Since.Equal(s.start) {
			t.Errorf("summary's request %+v, want denials since the start with end_holds", req)
		}
	}
}
