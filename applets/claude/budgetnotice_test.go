//go:build linux

package claude_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/sandbox"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// TestNoBudgetNoticeOnceADay: without a user manager (the test's
// sandbox has none), the first start says the missing budget in full,
// the next in one short line, and a start a day later in full again. The
// stamp is outside the sandbox's view.
func TestNoBudgetNoticeOnceADay(t *testing.T) {
	s := testutil.NewSandbox(t)
	p := filepath.Join(s.Home, "p")
	mkUserDir(t, s, p)
	full, short := "claude: "+sandbox.NoBudgetNotice+"\n", "claude: "+sandbox.NoBudgetShort+"\n"
	r := shellIn(t, s, p, `ls -a ~/.claude-homes 2>&1; true`)
	mustOK(t, r)
	if !strings.Contains(r.Stderr, full) || strings.Contains(r.Stderr, short) {
		t.Fatalf("first start: stderr %q\nwant the budget notice in full", r.Stderr)
	}
	if strings.Contains(r.Stdout, sandbox.BudgetNoticeStamp) {
		t.Errorf("the stamp is in the sandbox's view:\n%s", r.Stdout)
	}
	r = shellIn(t, s, p, `true`)
	mustOK(t, r)
	if strings.Contains(r.Stderr, full) || !strings.Contains(r.Stderr, short) {
		t.Errorf("second start: stderr %q\nwant the short line only", r.Stderr)
	}
	stamp := filepath.Join(s.Home, ".claude-homes", sandbox.BudgetNoticeStamp)
	day := time.Now().Add(-sandbox.NoBudgetEvery - time.Minute)
	if err := os.Chtimes(stamp, day, day); err != nil {
		t.Fatal(err)
	}
	r = shellIn(t, s, p, `true`)
	mustOK(t, r)
	if !strings.Contains(r.Stderr, full) {
		t.Errorf("a day later: stderr %q\nwant the budget notice in full", r.Stderr)
	}
	// A link planted as the stamp is no stamp: in full.
	os.Remove(stamp)
	if err := os.Symlink("/", stamp); err != nil {
		t.Fatal(err)
	}
	r = shellIn(t, s, p, `true`)
	if !strings.Contains(r.Stderr, full) {
		t.Errorf("stamp a link: stderr %q\nwant the budget notice in full", r.Stderr)
	}
}
