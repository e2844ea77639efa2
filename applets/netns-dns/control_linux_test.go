package netnsdns

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/netctl"
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
