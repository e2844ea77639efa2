package claudeupdate

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// holdFlocks has u take `flock -x` on every file and directory of dir (the
// bin dir included) and hold them until release is called. It returns the
// paths u managed to lock.
func holdFlocks(t *testing.T, u testutil.User, dir string) (held []string, release func()) {
	t.Helper()
	flock := testutil.RequireCommand(t, "flock")
	home := testutil.UserHome(t, u)
	var paths []string
	filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error {
		paths = append(paths, p)
		return nil
	})
	var stdins []io.Closer
	var cmds []*exec.Cmd
	for _, p := range paths {
		cmd := u.Command(home, flock, "-n", "-x", p, "sh", "-c", "echo held; exec cat >/dev/null")
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Either the lock is held ("held") or flock gave up (EOF).
		line, _ := bufio.NewReader(out).ReadString('\n')
		if line == "held\n" {
			held = append(held, p)
		}
		stdins = append(stdins, in)
		cmds = append(cmds, cmd)
	}
	return held, func() {
		for _, in := range stdins {
			in.Close()
		}
		for _, c := range cmds {
			c.Wait()
		}
	}
}

// TestUserFlockDoesNotBlockRoot: a plain user who flocks every file of the
// bin dir, and holds them until the update is over, delays neither
// update, --hold nor --rollback: the lock is root's alone.
func TestUserFlockDoesNotBlockRoot(t *testing.T) {
	u := testutil.RequireUser(t)
	f := newFixture(t)
	f.root = true
	f.dir = filepath.Join(testutil.RootOwnedDir(t), "bin")
	f.env["CLAUDE_SBX_BINDIR"] = f.dir
	f.release("2.1.95")
	f.release("2.1.100")
	f.mustRun("2.1.95")
	held, release := holdFlocks(t, u, f.dir)
	defer release()
	for _, p := range held {
		if p != f.dir && strings.HasPrefix(filepath.Base(p), ".claude-update") {
			t.Logf("%s flocked by %s", p, u.Name)
		}
	}
	for _, args := range [][]string{{"2.1.100"}, {"--hold"}, {"--unhold"}, {"--rollback"}} {
		f.mustRun(args...)
	}
	if f.current() != "claude.2.1.95" || f.previous() != "claude.2.1.100" {
		t.Errorf("claude -> %s, claude.previous -> %s; want 2.1.95, 2.1.100", f.current(), f.previous())
	}
}
