package netnsdns

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/netctl"
	"github.com/claude-sandbox/claude-sandbox/internal/netpolicy"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// TestWatchListensBeforeItsReply: once a watch's reply has arrived, a
// query of the namespace is held. The reply used to go out before the
// stream was counted, and a query sent at once was refused unseen.
func TestWatchListensBeforeItsReply(t *testing.T) {
	r, _, _ := newApproveResolver(t, nil)
	path := filepath.Join(t.TempDir(), "run", "control.sock")
	serveControl(t, r, path)
	for i := range 200 {
		c, err := netctl.Dial(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Do(netctl.Request{Op: netctl.OpWatch, Namespace: "agents"}); err != nil {
			t.Fatal(err)
		}
		if !r.hub.askable("agents") {
			t.Fatalf("try %d: the watch's reply came before netns-dns counted the watch: a query now would be refused, not held", i)
		}
		c.Close()
		for r.hub.askable("agents") { // until the server saw the close
			runtime.Gosched()
		}
	}
}

// dialAs connects to the control socket at path as uid: the effective
// uid of this thread alone, as SO_PEERCRED reads it, then root again.
func dialAs(t *testing.T, path string, uid uint32) *netctl.Conn {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), uintptr(uid), ^uintptr(0)); e != 0 {
		t.Fatalf("setresuid %d: %v", uid, e)
	}
	c, err := netctl.Dial(path)
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), 0, ^uintptr(0)); e != 0 {
		panic(fmt.Sprintf("setresuid back to root: %v", e)) // the thread must not go on as uid
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestStrangersConnectionsBounded performs the attack: a user with
// subordinate uids (useradd gives each user 65536) connects to the
// control socket from a user namespace as each of them, 64 connections a
// uid, each holding a file, a goroutine and up to a megabyte of line, and
// so exhausts netns-dns (MemoryMax=256M): DNS goes for every sandbox.
// Users who own no namespace share one small bound; an owner still gets
// in when it is full.
func TestStrangersConnectionsBounded(t *testing.T) {
	testutil.RequireRoot(t)
	r, _, _ := newApproveResolver(t, nil)
	top := t.TempDir()
	for _, d := range []string{filepath.Dir(top), top} { // the test's own
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(top, "run", "control.sock")
	serveControl(t, r, path)
	for i := range uint32(maxStrangerConns) {
		if _, err := dialAs(t, path, 100000+i).Do(netctl.Request{Op: netctl.OpOwned}); err != nil {
			t.Fatalf("stranger %d: %v", i, err)
		}
	}
	_, err := dialAs(t, path, 100000+maxStrangerConns).Do(netctl.Request{Op: netctl.OpOwned})
	want := fmt.Sprintf("netns-dns: uid %d owns no namespace, and users who own none have %d control connections open already: try again later", 100000+maxStrangerConns, maxStrangerConns)
	if err == nil || err.Error() != want {
		t.Fatalf("connection %d of users who own no namespace: %v, want %q", maxStrangerConns+1, err, want)
	}
	rep, err := dialAs(t, path, owner).Do(netctl.Request{Op: netctl.OpOwned})
	if err != nil || len(rep.Namespaces) != 1 || rep.Namespaces[0] != "agents" {
		t.Fatalf("the owner, while strangers fill their bound: %+v, %v; want agents", rep, err)
	}
}

// TestGroupApprover: a caller whose supplementary groups hold an owner
// group (approvers @GROUP) acts on the namespace; the same uid without the
// group is refused. The kernel names the groups: nothing the caller says.
func TestGroupApprover(t *testing.T) {
	testutil.RequireRoot(t)
	python := "/usr/bin/python3" // root's own: the caller runs as another uid
	if _, err := os.Stat(python); err != nil {
		t.Fatalf("%s: %v (apt-get install python3)", python, err)
	}
	r, _, _ := newApproveResolver(t, func(p *netpolicy.Policy) { p.OwnerGroups = []uint32{4711} })
	path := filepath.Join(testutil.PublicDir(t), "control.sock")
	serveControl(t, r, path)
	const script = `import socket,sys
s=socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b'{"op":"owned"}\n')
print(s.makefile().readline().strip())`
	for _, tt := range []struct {
		groups []uint32
		want   string
	}{
		{[]uint32{100, 4711}, `{"namespaces":["agents"]}`},
		{[]uint32{100}, `{}`},
	} {
		cmd := exec.Command(python, "-c", script, path)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: stranger, Gid: stranger, Groups: tt.groups}}
		out, err := cmd.CombinedOutput()
		if got := strings.TrimSpace(string(out)); err != nil || got != tt.want {
			t.Errorf("owned as uid %d in groups %v: %q, %v; want %s", stranger, tt.groups, got, err, tt.want)
		}
	}
}

// serveControl serves r's control socket at path until the test ends.
func serveControl(t *testing.T, r *Resolver, path string) {
	t.Helper()
	ln, err := listenControl(path)
	if err != nil {
		t.Fatal(err)
	}
	s := &controlServer{r: r, ln: ln, logf: t.Logf}
	go s.serve()
	t.Cleanup(func() { ln.Close() })
}

// TestIdleControlConnectionsClosed performs the attack: a user who owns no
// namespace opens the 16 control connections that all such users share and
// says nothing on them (or holds them as watch streams, which send nothing
// either); another such user's `net list` (its owned request) was then
// refused for as long as they stayed open. Connections that say nothing
// for controlIdle are closed, streams of a user who owns nothing too, and
// the second user gets in.
func TestIdleControlConnectionsClosed(t *testing.T) {
	testutil.RequireRoot(t)
	old := controlIdle
	controlIdle = 50 * time.Millisecond
	defer func() { controlIdle = old }()
	for _, tt := range []struct {
		name string
		req  *netctl.Request // sent first, nil for none
		want string          // the line before the close
	}{
		{"silent", nil, `{"error":"no request for 50ms: connection closed"}`},
		{"watch", &netctl.Request{Op: netctl.OpWatch}, `{"error":"uid 100000 owns no namespace: stream closed after 50ms; watch again once one is up"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, _, _ := newApproveResolver(t, nil)
			top := t.TempDir()
			for _, d := range []string{filepath.Dir(top), top} {
				if err := os.Chmod(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			path := filepath.Join(top, "run", "control.sock")
			serveControl(t, r, path)
			var idle []*netctl.Conn
			for range maxStrangerConns {
				c := dialAs(t, path, 100000)
				if tt.req != nil {
					if _, err := c.Do(*tt.req); err != nil {
						t.Fatal(err)
					}
				}
				idle = append(idle, c)
			}
			for i, c := range idle {
				// Not a threshold: only so that a connection never closed
				// fails the test rather than hangs it.
				c.Raw().SetReadDeadline(time.Now().Add(time.Minute))
				got, err := io.ReadAll(c.Raw()) // until netns-dns closes it
				if err != nil || strings.TrimSpace(string(got)) != tt.want {
					t.Fatalf("idle connection %d: read %q, %v; want %s, then the close", i, got, err, tt.want)
				}
			}
			if _, err := dialAs(t, path, 100001).Do(netctl.Request{Op: netctl.OpOwned}); err != nil {
				t.Fatalf("another user who owns no namespace, after %d idle connections: %v", maxStrangerConns, err)
			}
		})
	}
}
