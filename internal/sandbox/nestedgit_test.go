package sandbox

import (
	"fmt"
	"testing"
	"time"
)

// TestGitScanTimeBoundAfterFloor: the start scan's time bound counts only
// once MinGitScanDirs directories are listed. A start descheduled past the
// bound (here: a deadline already gone) still covers a small tree whole,
// its nested repository included; a large one is cut and says where.
func TestGitScanTimeBoundAfterFloor(t *testing.T) {
	for _, tt := range []struct {
		dirs int
		cut  bool
	}{{dirs: 20}, {dirs: MinGitScanDirs - 3}, {dirs: 4 * MinGitScanDirs, cut: true}} {
		h := &fakeHost{files: map[string]string{"/p": "d"}, reachable: map[string]bool{}, contents: map[string]string{}}
		for i := range tt.dirs {
			h.files[fmt.Sprintf("/p/d%04d", i)] = "d"
		}
		// The repository is in the last directory the breadth-first walk
		// lists.
		last := fmt.Sprintf("/p/d%04d", tt.dirs-1)
		h.files[last+"/.git"] = "d"
		gone := time.Now().Add(-time.Second)
		w := walkRepos(h, "/p", &scanBudget{entries: MaxGitScanEntries, deadline: gone, now: time.Now})
		if got := len(w.cut) > 0; got != tt.cut {
			t.Errorf("%d directories, deadline passed: cut = %v (%d left), want %v", tt.dirs, got, len(w.cut), tt.cut)
		}
		if !tt.cut && (len(w.worktrees) != 1 || w.worktrees[0] != last) {
			t.Errorf("%d directories, deadline passed: repositories found = %v, want [%s]", tt.dirs, w.worktrees, last)
		}
	}
}
