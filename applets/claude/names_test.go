//go:build linux

package claude_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/quote"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// TestRefusalQuotesNames: a directory name chosen by an earlier sandbox
// (any directory of the home may have been its project) holds escape
// sequences that would set the window title, erase the line and forge a
// line of the launcher's. The refusal that names it prints it quoted.
func TestRefusalQuotesNames(t *testing.T) {
	s := testutil.NewSandbox(t)
	evil := "x\x1b]0;pwned\x07\x1b[2Kclaude: all is well\x1b[8m"
	dir := filepath.Join(s.Home, "src", evil)
	mkUserDir(t, s, dir)
	mkUserDir(t, s, filepath.Join(s.Home, ".target"))
	link := filepath.Join(dir, "docs")
	if err := os.Symlink(filepath.Join(s.Home, ".target"), link); err != nil {
		t.Fatal(err)
	}
	s.User.Chown(t, link)
	s.WriteConfig(t, "ro '"+link+"' /mnt/docs\n")
	r := s.Shell(t, "true")
	if r.Code != 2 {
		t.Fatalf("launcher exit %d, want 2 (a refused bind source)\n%v", r.Code, r)
	}
	if strings.ContainsAny(r.Stderr, "\x1b\x07") {
		t.Errorf("stderr holds the name's control bytes raw: %q", r.Stderr)
	}
	want := quote.String(link) + " is a symlink in "
	if !strings.Contains(r.Stderr, want) {
		t.Errorf("stderr %q does not name the link quoted, as %q", r.Stderr, want)
	}
}
