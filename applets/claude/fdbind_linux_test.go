package claude

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/hostpath"
)

// within remembers the walk up from a directory, not its answer: a root
// added after the first question (a directory bindFromFDs creates) counts
// in the next.
func TestWithinRemembersTheWalkNotTheAnswer(t *testing.T) {
	top := t.TempDir()
	deep := filepath.Join(top, "a", "b")
	if err := os.MkdirAll(deep, 0o700); err != nil {
		t.Fatal(err)
	}
	b := &bound{roots: map[hostpath.ID]string{}}
	d := openPath(t, deep)
	if _, in, err := b.within(d); err != nil || in {
		t.Fatalf("within with no roots = %v, %v; want false", in, err)
	}
	if len(b.above) != 1 {
		t.Fatalf("walks remembered: %d, want 1", len(b.above))
	}
	id, err := hostpath.Stat(openPath(t, filepath.Join(top, "a")))
	if err != nil {
		t.Fatal(err)
	}
	b.roots[id] = "a"
	got, in, err := b.within(d)
	if err != nil || !in || got != id {
		t.Fatalf("within after adding the root a = %v, %v, %v; want %v, true", got, in, err, id)
	}
	if len(b.above) != 1 {
		t.Errorf("walks remembered: %d, want still 1 (the walk is reused)", len(b.above))
	}
}
