//go:build linux

package claude_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// TestSparseGitFilesRefusedUnread: the agent makes sub/.git one level
// below the project and truncates its index, or its config, to 1 GiB (a
// sparse file: no disk used). The next start takes the size on the opened
// file and refuses it without reading it, naming the file: its memory
// stays small (the child's ru_maxrss).
func TestSparseGitFilesRefusedUnread(t *testing.T) {
	for _, tt := range []struct {
		file string
		want func(p string) string
	}{
		{"index", func(p string) string {
			return "claude: " + p + ": a git index of 1073741824 bytes, more than one of 1048576 entries takes (167772160), not read: remove this file (in a repository of yours, git reset makes it anew)\n"
		}},
		{"config", func(p string) string {
			return "claude: git config " + p + ": 1073741824 bytes, more than the 1048576 a git config is read to, not read: remove it, or make it smaller on the host\n"
		}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			s := testutil.NewSandbox(t)
			proj := filepath.Join(s.Home, "src", "x")
			mkUserDir(t, s, filepath.Join(proj, "sub", ".git"))
			s.User.Chown(t, filepath.Join(s.Home, "src"))
			big := filepath.Join(proj, "sub", ".git", tt.file)
			writeUserFile(t, s, big, "", 0o644)
			if err := os.Truncate(big, 1<<30); err != nil {
				t.Fatal(err)
			}
			cmd := s.Command("--shell", "-c", "echo started")
			cmd.Dir = proj
			start := time.Now()
			r := testutil.RunCommand(t, cmd)
			took := time.Since(start)
			want := tt.want(big)
			if r.Code != 1 || r.Stdout != "" || !strings.HasSuffix(r.Stderr, want) {
				t.Errorf("want exit 1 and\n%s%v", want, r)
			}
			ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			if !ok {
				t.Fatal("no rusage of the launcher")
			}
			// ru_maxrss is in KiB.
			if rss := ru.Maxrss * 1024; rss > 32<<20 {
				t.Errorf("the launcher's maximum RSS was %d bytes, want at most 32 MiB", rss)
			}
			t.Logf("refused in %v, maximum RSS %d KiB", took, ru.Maxrss)
		})
	}
}
