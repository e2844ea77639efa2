package claude

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// openPath opens dir O_PATH, as bindFromFDs does.
func openPath(t *testing.T, dir string) *os.File {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), dir)
	t.Cleanup(func() { f.Close() })
	return f
}

func modeOf(t *testing.T, p string) fs.FileMode {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
}

func TestRestoreModes(t *testing.T) {
	base := t.TempDir()
	for _, tc := range []struct {
		name   string
		start  os.FileMode
		chmod  os.FileMode // 0: left alone
		rename bool        // the name now leads elsewhere
		want   string
	}{
		{"unchanged", 0o700, 0, false, ""},
		{"world-writable", 0o755, 0o777, false, "claude: the sandbox changed the mode of DIR from 0755 to 0777: restored 0755\n"},
		{"opened to others", 0o700, 0o755, false, "claude: the sandbox changed the mode of DIR from 0700 to 0755: restored 0700\n"},
		{"sticky and setgid", 0o755, 0o755 | fs.ModeSticky | fs.ModeSetgid, false, "claude: the sandbox changed the mode of DIR from 0755 to 3755: restored 0755\n"},
		{"renamed away, restored on the fd", 0o700, 0o777, true, "claude: the sandbox changed the mode of DIR from 0700 to 0777: restored 0700\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(base, strings.ReplaceAll(tc.name, " ", "-")+"\x1b[2J")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, tc.start); err != nil {
				t.Fatal(err)
			}
			m, err := recordModes([]string{dir}, []*os.File{openPath(t, dir)})
			if err != nil {
				t.Fatal(err)
			}
			if tc.chmod != 0 {
				if err := os.Chmod(dir, tc.chmod); err != nil {
					t.Fatal(err)
				}
			}
			at := dir
			if tc.rename {
				// A directory of the same name, mode 0777, takes its place:
				// restore must not touch it.
				at = dir + "-moved"
				if err := os.Rename(dir, at); err != nil {
					t.Fatal(err)
				}
				if err := os.Mkdir(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(dir, 0o777); err != nil {
					t.Fatal(err)
				}
			}
			var out bytes.Buffer
			m.restore(&out)
			want := strings.ReplaceAll(tc.want, "DIR", `"`+strings.ReplaceAll(dir, "\x1b", `\x1b`)+`"`)
			if out.String() != want {
				t.Errorf("restore printed %q, want %q", out.String(), want)
			}
			if got := modeOf(t, at); got != tc.start {
				t.Errorf("mode after restore = %v, want %v", got, tc.start)
			}
			if tc.rename {
				if got := modeOf(t, dir); got != 0o777 {
					t.Errorf("the directory now at the name: mode %v, want 0777 (untouched)", got)
				}
			}
		})
	}
}

// TestChmodProcFD: the fallback for kernels before fchmodat2 sets the
// mode through an O_PATH fd too.
func TestChmodProcFD(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := chmodProcFD(int(openPath(t, dir).Fd()), 0o710); err != nil {
		t.Fatal(err)
	}
	if got := modeOf(t, dir); got != 0o710 {
		t.Errorf("mode = %v, want 0710", got)
	}
}

func TestWritableRoots(t *testing.T) {
	a, b, c := openPath(t, "/"), openPath(t, "/tmp"), openPath(t, "/usr")
	p := &bwrap.Plan{Ops: []bwrap.Op{
		{Kind: bwrap.ROBind, Src: "/usr", Dest: "/usr", SrcFD: 5},
		{Kind: bwrap.Bind, Src: "/home/u/.claude-home", Dest: "/home/u", SrcFD: 6},
		{Kind: bwrap.Tmpfs, Dest: "/run"},
		{Kind: bwrap.Bind, Src: "/home/u/src/p", Dest: "/home/u/src/p", SrcFD: 7},
		{Kind: bwrap.DevBind, Src: "/dev/kvm", Dest: "/dev/kvm"},
	}}
	names, fds := writableRoots(p, []*os.File{c, a, b}, 5)
	if strings.Join(names, " ") != "/home/u/.claude-home /home/u/src/p" || len(fds) != 2 || fds[0] != a || fds[1] != b {
		t.Errorf("writableRoots = %q, %v", names, fds)
	}
}

// TestProjectRootModeRestored: the agent opens the project root (a mount
// point it cannot rename, but owns) to every local user; at exit the
// launcher puts the mode back and says so.
func TestProjectRootModeRestored(t *testing.T) {
	s := testutil.NewSandbox(t)
	proj := filepath.Join(s.Home, "src", "p")
	for _, d := range []string{filepath.Join(s.Home, "src"), proj} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		s.User.Chown(t, d)
	}
	if err := os.Chmod(proj, 0o750); err != nil {
		t.Fatal(err)
	}
	cmd := s.Command("--shell", "-c", `chmod 0777 "$PWD" && stat -c %a "$PWD" && chmod 0751 "$HOME" && stat -c %a "$HOME"`)
	cmd.Dir = proj
	r := testutil.RunCommand(t, cmd)
	if r.Code != 0 || r.Stdout != "777\n751\n" {
		t.Fatalf("inside: %s\nwant both chmods to take (777, 751)", r)
	}
	if got := modeOf(t, proj); got != 0o750 {
		t.Errorf("project root mode after exit = %v, want 0750", got)
	}
	want := "claude: the sandbox changed the mode of " + proj + " from 0750 to 0777: restored 0750"
	if !strings.Contains(r.Stderr, want+"\n") {
		t.Errorf("stderr:\n%s\nwant the line %q", r.Stderr, want)
	}
	if n := strings.Count(r.Stderr, "claude: the sandbox changed the mode of "); n != 2 {
		t.Errorf("stderr:\n%s\nwant 2 lines about changed modes (the project and the sandbox home), got %d", r.Stderr, n)
	}
}

// getfacl prints the ACLs of dir, access and default, without the header.
func getfacl(t *testing.T, dir string) string {
	t.Helper()
	out, err := exec.Command("getfacl", "--omit-header", "--absolute-names", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("getfacl %s: %v\n%s", dir, err, out)
	}
	return string(out)
}

func setfacl(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("setfacl", args...).CombinedOutput(); err != nil {
		t.Fatalf("setfacl %q: %v\n%s", args, err, out)
	}
}

// TestRestoreACLs: an ACL the sandbox added, changed or removed on a bind
// root is put back at exit, on the fd, with one line each; the mode too.
func TestRestoreACLs(t *testing.T) {
	testutil.RequireCommand(t, "setfacl")
	testutil.RequireCommand(t, "getfacl")
	base := t.TempDir()
	for _, tc := range []struct {
		name   string
		start  []string   // setfacl arguments before the record, nil: none
		change [][]string // setfacl commands inside
		want   string
	}{
		{"default added", nil, [][]string{{"-d", "-m", "o::rwx,m::rwx,g::rwx"}},
			"claude: the sandbox added the default ACL of DIR: restored\n"},
		{"access changed", []string{"-m", "u:nobody:r-x"}, [][]string{{"-m", "u:nobody:rwx,o::rwx"}},
			"claude: the sandbox changed the access ACL of DIR: restored\n"},
		{"default removed", []string{"-d", "-m", "o::---,g::---"}, [][]string{{"-k"}},
			"claude: the sandbox removed the default ACL of DIR: restored\n"},
		{"both added", nil, [][]string{{"-m", "u:nobody:rwx"}, {"-d", "-m", "o::rwx"}},
			"claude: the sandbox added the access ACL of DIR: restored\n" +
				"claude: the sandbox added the default ACL of DIR: restored\n" +
				"claude: the sandbox changed the mode of DIR from 0700 to 0770: restored 0700\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(base, strings.ReplaceAll(tc.name, " ", "-")+"\x1b[2J")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if tc.start != nil {
				setfacl(t, append(tc.start, dir)...)
			}
			before, mode := getfacl(t, dir), modeOf(t, dir)
			m, err := recordModes([]string{dir}, []*os.File{openPath(t, dir)})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range tc.change {
				setfacl(t, append(c, dir)...)
			}
			if getfacl(t, dir) == before {
				t.Fatalf("setfacl %q changed nothing", tc.change)
			}
			// The name leads elsewhere now: restore works on the fd.
			moved := dir + "-moved"
			if err := os.Rename(dir, moved); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			m.restore(&out)
			want := strings.ReplaceAll(tc.want, "DIR", `"`+strings.ReplaceAll(dir, "\x1b", `\x1b`)+`"`)
			if out.String() != want {
				t.Errorf("restore printed %q, want %q", out.String(), want)
			}
			if got := strings.ReplaceAll(getfacl(t, moved), moved, dir); got != before {
				t.Errorf("ACLs after restore:\n%s\nwant\n%s", got, before)
			}
			if got := modeOf(t, moved); got != mode {
				t.Errorf("mode after restore = %v, want %v", got, mode)
			}
		})
	}
}
