package claude

import (
	"context"
	"fmt"
	"html"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/bindir"
	"github.com/claude-sandbox/claude-sandbox/internal/netctl"
	"github.com/claude-sandbox/claude-sandbox/internal/nsname"
	"github.com/claude-sandbox/claude-sandbox/internal/quote"
	"github.com/claude-sandbox/claude-sandbox/internal/sandbox"
)

// maxSummary is how many refused names the summary after a session
// lists; a count stands for the rest.
const maxSummary = 10

// maxAsking is how many desktop notifications a session keeps open at
// once; a sandbox that looks up many names gets no more.
const maxAsking = 3

// notifyDirs are where the launcher looks for notify-send (libnotify-bin):
// the system's own directories, never the user's PATH, and only if root
// owns the file and every directory above it (bindir.CheckTrustedFile).
var notifyDirs = []string{"/usr/bin", "/bin"}

// netSession is the launcher's session with netns-dns: opened on its
// control socket (internal/netctl) before the sandbox starts, so that
// approvals for the session last while it runs and held queries reach a
// desktop notification; ended when the chain ends; then summarized.
//
// It writes nothing while the sandbox runs: the agent owns the terminal.
// A nil *netSession (no namespace, no socket, a refusal) does nothing.
type netSession struct {
	socket, ns, base string
	uid              int
	start            time.Time
	conn             *netctl.Conn
	// notify is the trusted notify-send ("" none), run with env.
	notify string
	env    []string

	ctx    context.Context
	cancel context.CancelFunc
	ended  sync.Once
	wg     sync.WaitGroup
	mu     sync.Mutex
	asking map[string]bool // names with a notification open
}

// openNetSession opens the session of the namespace l enters (base is the
// namespace before the user's own, uid the user) on socket. Without a
// namespace, without the socket, or when netns-dns refuses, the sandbox
// runs as before and nothing is said: a session is never a reason to
// refuse. notify finds the notify-send to ask with ("" none); the session
// tells netns-dns whether it can ask (without, netns-dns holds nothing for
// it).
func openNetSession(l *sandbox.Launch, socket, base string, uid int, notify func() string, env []string) *netSession {
	if len(l.NetnsEnter) < 2 {
		return nil
	}
	ns := l.NetnsEnter[1]
	start := time.Now()
	c, err := netctl.Dial(socket)
	if err != nil {
		return nil
	}
	// Asks only with a notify-send to ask with: else netns-dns holds no
	// query for this session, which nobody could answer.
	n := notify()
	if _, err := c.Do(netctl.Request{Op: netctl.OpSession, Namespace: ns, Asks: n != ""}); err != nil {
		c.Close()
		return nil
	}
	s := &netSession{socket: socket, ns: ns, base: base, uid: uid, start: start, conn: c,
		notify: n, env: hostEnv(env), asking: map[string]bool{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.wg.Add(1)
	go s.events()
	return s
}

// hostEnv is env without the variables that steer the dynamic loader or
// libc (sandbox.LoaderVar), as for the chain: an LD_LIBRARY_PATH with an
// empty entry, or a relative one, names the launcher's directory, which
// the sandbox writes.
func hostEnv(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return sandbox.LoaderVar(k)
	})
}

// findNotifySend returns the notify-send of notifyDirs that root owns and
// only root can change, and "" without a desktop session bus or without
// such a file.
func findNotifySend(getenv func(string) string, dirs []string) string {
	if getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		return ""
	}
	for _, d := range dirs {
		p := filepath.Join(d, "notify-send")
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			continue
		}
		if bindir.CheckTrustedFile("notify-send", p) == nil {
			return p
		}
	}
	return ""
}

// events reads the session's events until the stream ends, and asks the
// desktop about each held name.
func (s *netSession) events() {
	defer s.wg.Done()
	for {
		var ev netctl.Event
		if err := s.conn.Recv(&ev); err != nil {
			return
		}
		if ev.Kind == netctl.EventHeld && s.notify != "" {
			s.ask(ev)
		}
	}
}

// Notification actions: the key notify-send prints, and the scope of the
// approval it stands for ("" deny).
var notifyActions = []struct{ key, label, scope string }{
	{"once", "Allow once", netctl.ScopeOnce},
	{"session", "Allow for this session", netctl.ScopeSession},
	{"always", "Always allow", netctl.ScopeAlways},
	{"deny", "Deny", ""},
}

// ask shows a notification for a held name, in the background, and
// answers with the action chosen; closing it answers nothing (the hold
// runs out and the name is refused).
func (s *netSession) ask(ev netctl.Event) {
	key := ev.Namespace + " " + ev.Name
	s.mu.Lock()
	if s.ctx.Err() != nil || s.asking[key] || len(s.asking) >= maxAsking {
		s.mu.Unlock()
		return
	}
	s.asking[key] = true
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		defer func() {
			s.mu.Lock()
			delete(s.asking, key)
			s.mu.Unlock()
		}()
		chosen := s.run(notifyArgs(ev, time.Until(ev.Until)))
		for _, a := range notifyActions {
			if a.key != chosen {
				continue
			}
			req := netctl.Request{Op: netctl.OpAllow, Namespace: ev.Namespace, Name: ev.Name, Scope: a.scope}
			if a.scope == "" {
				req = netctl.Request{Op: netctl.OpRevoke, Namespace: ev.Namespace, Name: ev.Name}
			}
			if c, err := netctl.Dial(s.socket); err == nil {
				c.Do(req) // nothing to say while the agent runs
				c.Close()
			}
		}
	}()
}

// notifyArgs are notify-send's arguments for a held name: its actions, a
// wait for the choice, and the name escaped (quote) and as text, not markup.
func notifyArgs(ev netctl.Event, left time.Duration) []string {
	args := []string{"--app-name=claude-sandbox", "--wait"}
	if left > 0 {
		args = append(args, "--expire-time="+strconv.FormatInt(left.Milliseconds(), 10))
	}
	for _, a := range notifyActions {
		args = append(args, "--action="+a.key+"="+a.label)
	}
	name := html.EscapeString(quote.String(ev.Name))
	body := fmt.Sprintf("The sandbox in %s looked up %s, which its allowlist does not name. The lookup waits for your answer.", html.EscapeString(quote.String(ev.Namespace)), name)
	return append(args, "--", "Allow "+name+"?", body)
}

// run runs notify-send with args and returns the key it printed. Its
// stdin and stderr are /dev/null: it has nothing of the agent's terminal.
// It runs in /, with the launcher's environment less what steers the
// loader (hostEnv).
func (s *netSession) run(args []string) string {
	cmd := exec.CommandContext(s.ctx, s.notify, args...)
	cmd.Env = s.env
	// Not the launcher's directory (the project, the sandbox's to write):
	// nothing notify-send reads by a relative name comes from there.
	cmd.Dir = "/"
	// A session of its own: no controlling terminal, the agent's least.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setsid: true}
	var out strings.Builder
	cmd.Stdout = &out // and not Output, which would take stderr too
	if cmd.Run() != nil {
		return ""
	}
	return strings.TrimSpace(out.String())
}

// end ends the session when the chain has ended, before the launcher
// reaps what is left of it: the notifications still open are closed
// (their notify-send killed and waited for) and the session's approvals
// end with the connection.
func (s *netSession) end() {
	if s == nil {
		return
	}
	s.ended.Do(func() {
		s.mu.Lock()
		s.cancel()
		s.mu.Unlock()
		s.conn.Close()
		s.wg.Wait()
	})
}

// summary ends the session and writes one line per name netns-dns refused
// in the namespace since the session began (at most maxSummary, then a
// count of the rest), each with the command that allows it. It runs after
// the terminal is put back.
func (s *netSession) summary(w io.Writer) {
	if s == nil {
		return
	}
	s.end()
	c, err := netctl.Dial(s.socket)
	if err != nil {
		return
	}
	defer c.Close()
	// EndHolds: the names still held now are refused, and so this
	// session's, never the next one's.
	rep, err := c.Do(netctl.Request{Op: netctl.OpDenials, Namespace: s.ns, Since: s.start, EndHolds: true})
	if err != nil {
		return
	}
	var names []netctl.Denial
	for _, d := range rep.Denials {
		if d.Name != "" && d.Namespace == s.ns {
			names = append(names, d)
		}
	}
	if len(names) == 0 {
		return
	}
	slices.SortStableFunc(names, func(a, b netctl.Denial) int { return a.Time.Compare(b.Time) })
	// The command names the namespace unless it is the net command's
	// default for this user.
	flag := s.ns
	if owned, err := c.Do(netctl.Request{Op: netctl.OpOwned}); err == nil &&
		nsname.ForUser(s.base, s.uid, func(n string) bool { return slices.Contains(owned.Namespaces, n) }) == s.ns {
		flag = ""
	}
	for i, d := range names {
		if i == maxSummary {
			fmt.Fprintf(w, "claude: and %d more refused %s: %s denials %s\n", len(names)-maxSummary, plural(len(names)-maxSummary, "name", "names"), netctl.Command, s.ns)
			break
		}
		cmd, why := netctl.Advice(d, netctl.ScopeAlways, flag)
		if cmd != "" {
			why = "to allow it: " + cmd
		}
		fmt.Fprintf(w, "claude: netns-dns %s (%s): %s\n", netctl.What(d), times(d.Count), why)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return strconv.Itoa(n) + " times"
}
