package claudeupdate

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// TestRootSkipsUserConf: as root, a configuration file another user can
// write is skipped with one line, and the run uses the release source; the
// same file configures a user's own run.
func TestRootSkipsUserConf(t *testing.T) {
	testutil.RequireRoot(t)
	u := testutil.RequireUser(t)
	f := confFixture(t)
	f.root = true
	f.dir = filepath.Join(testutil.RootOwnedDir(t), "bin")
	f.env["CLAUDE_SBX_BINDIR"] = f.dir
	if err := os.WriteFile(f.conf, []byte("source npm\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	u.Chown(t, f.conf)
	var stderr bytes.Buffer
	if _, err := f.runErrTo(&stderr); err != nil {
		t.Fatalf("claude-update: %v", err)
	}
	want := fmt.Sprintf("claude-update: config %s is unsafe for root: %s is owned by uid %d, not root: root reads only what root owns and only root can write; skipped\n", f.conf, f.conf, u.Uid)
	if stderr.String() != want {
		t.Errorf("stderr = %q\nwant %q", stderr.String(), want)
	}
	if f.current() != "claude.2.1.100" {
		t.Errorf("claude -> %s, want claude.2.1.100 from the release source", f.current())
	}
	f.root = false
	f.mustRun()
	if f.current() != "claude.2.1.101" {
		t.Errorf("a user's run: claude -> %s, want claude.2.1.101 from npm", f.current())
	}
}
