package claudeupdate

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// tmpfs mounts a tmpfs of size bytes on a new directory and returns it.
func tmpfs(t *testing.T, size int) string {
	t.Helper()
	testutil.RequireRoot(t)
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0755", size)); err != nil {
		testutil.Missing(t, "mount tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
	return mnt
}

func free(t *testing.T, dir string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

func TestDiskFull(t *testing.T) {
	mnt := tmpfs(t, 2<<20)
	t.Run("not enough space", func(t *testing.T) {
		f := newFixture(t)
		f.dir = filepath.Join(mnt, "a")
		f.env["CLAUDE_SBX_BINDIR"] = f.dir
		f.release("2.1.95")
		f.mustRun("2.1.95")
		r := f.newRel("2.1.100")
		r.bin = fakeAgent("2.1.100", 4<<20)
		r.builds[f.platform] = r.bin
		f.publish(r)
		before := f.snapshot()
		need := int64(4<<20) + int64(4<<20)/10 + 1<<20
		want := fmt.Sprintf("not enough space in %s: need %s, %s free", f.dir, mb(need), mb(free(t, f.dir)))
		_, msg := f.run("2.1.100")
		if msg != want {
			t.Errorf("got %q, want %q", msg, want)
		}
		f.assertUnchanged(before)
		if f.hits(f.binURL("2.1.100")[len(f.srv.URL):]) != 0 {
			t.Errorf("downloaded although the space was known to be short")
		}
		os.RemoveAll(f.dir)
	})
	for _, known := range []bool{true, false} {
		name := "npm: tar header says too big"
		if !known {
			name = "npm: full while writing"
		}
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.dir = filepath.Join(mnt, "b")
			f.env["CLAUDE_SBX_BINDIR"] = f.dir
			f.npmPublish(map[string]string{"latest": "2.1.100"},
				npmVersion{version: "2.1.95", tarball: f.npmTarball("2.1.95", fakeAgent("2.1.95", agentSize))},
				// Compresses to a few kB: only the tar header or the
				// write tells that it does not fit.
				npmVersion{version: "2.1.100", tarball: f.npmTarball("2.1.100", fakeAgent("2.1.100", 4<<20))})
			f.mustRun("--source", "npm", "--registry", f.registry, "2.1.95")
			before := f.snapshot()
			need := int64(4<<20) + int64(4<<20)/10 + 1<<20
			want := fmt.Sprintf("not enough space in %s: need %s, %s free", f.dir, mb(need), mb(free(t, f.dir)))
			if !known {
				// The free space is misreported: the write fails.
				f.free = 1 << 40
				want = f.dir + " is full: no space left on device"
			}
			_, msg := f.run("--source", "npm", "--registry", f.registry)
			if msg != want {
				t.Errorf("got %q, want %q", msg, want)
			}
			f.assertUnchanged(before)
			if f.current() != "claude.2.1.95" {
				t.Errorf("claude -> %s", f.current())
			}
			os.RemoveAll(f.dir)
		})
	}
}

func TestReadOnlyDir(t *testing.T) {
	mnt := tmpfs(t, 8<<20)
	f := newFixture(t)
	f.dir = filepath.Join(mnt, "bin")
	f.env["CLAUDE_SBX_BINDIR"] = f.dir
	f.release("2.1.95")
	f.release("2.1.100")
	f.mustRun("2.1.95")
	if err := syscall.Mount("", mnt, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount read-only: %v", err)
	}
	before := f.snapshot()
	want := f.dir + " is not writable (read-only file system): run with sudo or set CLAUDE_SBX_BINDIR"
	for _, args := range [][]string{{"2.1.100"}, {"--rollback"}} {
		if _, msg := f.run(args...); msg != want {
			t.Errorf("claude-update %q: %q, want %q", args, msg, want)
		}
	}
	f.assertUnchanged(before)
	if out := f.mustRun("--list"); out != "* 2.1.95 (current)\n" {
		t.Errorf("--list = %q", out)
	}
}

// TestNotWritableAsUser runs the real binary as an unprivileged user
// against a root-owned bin dir.
func TestNotWritableAsUser(t *testing.T) {
	u := testutil.RequireUser(t)
	dir := filepath.Join(testutil.PublicDir(t), "bin")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	link := testutil.Link(t, testutil.PublicDir(t), "claude-update")
	home := testutil.UserHome(t, u)
	cmd := u.Command(home, link, "2.1.100")
	cmd.Env = append(cmd.Env, "CLAUDE_SBX_BINDIR="+dir)
	out, err := cmd.CombinedOutput()
	code := -1
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	want := "claude-update: " + dir + " is not writable (permission denied): run with sudo or set CLAUDE_SBX_BINDIR\n"
	if code != 1 || string(out) != want {
		t.Errorf("as %s: exit %d, output %q; want 1, %q", u.Name, code, out, want)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("bin dir not empty: %v", ents)
	}
}
