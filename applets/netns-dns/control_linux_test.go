package netnsdns

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

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
	ln, err := listenControl(path)
	if err != nil {
		t.Fatal(err)
	}
	s := &controlServer{r: r, ln: ln, logf: t.Logf}
	go s.serve()
	t.Cleanup(func() { ln.Close() })
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
	ln, err := listenControl(path)
	if err != nil {
		t.Fatal(err)
	}
	s := &controlServer{r: r, ln: ln, logf: t.Logf}
	go s.serve()
	t.Cleanup(func() { ln.Close() })
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
