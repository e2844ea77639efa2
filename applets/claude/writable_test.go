//go:build linux

package claude_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/sandbox"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// These tests perform the attacks on the host side of the chain: whatever
// the sandbox can write (its home, its /tmp, every rw bind) must never
// steer the launcher, systemd-run, netns-enter or bwrap.

// buildMarkerLib compiles a shared library that, when loaded, appends the
// path of the loading program to log. It returns the library's directory
// (root's, readable by all) and its file name.
func buildMarkerLib(t *testing.T, log string) (dir, name string) {
	t.Helper()
	gcc := testutil.RequireCommand(t, "gcc")
	dir = filepath.Join(testutil.PublicDir(t), "lib")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "mark.c")
	code := `#include <fcntl.h>
#include <unistd.h>
__attribute__((constructor)) static void mark(void) {
	char buf[4096];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
	int fd = open(LOG, O_WRONLY | O_APPEND | O_CREAT, 0666);
	if (fd < 0 || n <= 0) return;
	buf[n] = '\n';
	write(fd, buf, n + 1);
	close(fd);
}
`
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	name = "libsbxmark.so"
	out, err := exec.Command(gcc, "-shared", "-fPIC", `-DLOG="`+log+`"`, "-o", filepath.Join(dir, name), src).CombinedOutput()
	if err != nil {
		t.Fatalf("gcc: %v: %s", err, out)
	}
	os.Chmod(filepath.Join(dir, name), 0o755)
	return dir, name
}

// TestLoaderVariablesStayInside: LD_PRELOAD and LD_LIBRARY_PATH, set by the
// config or by the user's shell, never reach the host side of the chain
// (bwrap here; systemd-run and netns-enter get the same environment). Set
// by the config, they apply inside: the sandbox is the agent's.
func TestLoaderVariablesStayInside(t *testing.T) {
	s := testutil.NewSandbox(t)
	logDir := filepath.Join(testutil.PublicDir(t), "log")
	mkUserDir(t, s, logDir)
	log := filepath.Join(logDir, "loaded")
	libDir, lib := buildMarkerLib(t, log)
	bwrapPath, _ := exec.LookPath("bwrap")
	bwrapReal, _ := filepath.EvalSymlinks(bwrapPath)
	tests := []struct {
		name   string
		config string
		env    []string
	}{
		{"config", "ro " + libDir + "\nrw " + logDir + "\nsetenv LD_LIBRARY_PATH " + libDir + "\nsetenv LD_PRELOAD " + lib + "\n", nil},
		{"user environment", "ro " + libDir + "\nrw " + logDir + "\n", []string{"LD_PRELOAD=" + filepath.Join(libDir, lib), "GCONV_PATH=" + libDir, "GLIBC_TUNABLES=glibc.malloc.check=3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			os.Remove(log)
			s.WriteConfig(t, tt.config)
			s.Env = tt.env
			r := s.Shell(t, `echo "LD_PRELOAD=$LD_PRELOAD"; env | grep -c '^LC_ALL=' ; true`)
			mustOK(t, r)
			b, _ := os.ReadFile(log)
			lines := strings.Fields(string(b))
			if len(lines) == 0 {
				t.Errorf("the library was not loaded inside (want it there): %v", r)
			}
			for _, l := range lines {
				if l == bwrapPath || l == bwrapReal || strings.HasSuffix(l, "/systemd-run") || strings.HasSuffix(l, "/netns-enter") {
					t.Errorf("host side of the chain loaded the library: %s loaded it (log %q)", l, b)
				}
			}
			// The chain's LC_ALL=C does not leak inside.
			if !strings.Contains(r.Stdout, "\n0\n") {
				t.Errorf("LC_ALL set inside: %v", r)
			}
		})
	}
}

// linkConfig makes ~/.claude-sandbox-init a symlink (the user's own) to
// target and writes text there.
func linkConfig(t *testing.T, s *testutil.Sandbox, target, text string) {
	t.Helper()
	mkUserDir(t, s, filepath.Dir(target))
	writeUserFile(t, s, target, text, 0o600)
	p := filepath.Join(s.Home, ".claude-sandbox-init")
	os.Remove(p)
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
	s.User.Chown(t, p)
}

// TestConfigInWritableMountRefused: a config file the agent can write
// (through a rw bind, its home, or a symlink on the way) lets it choose what
// the next start exposes. The launcher refuses it, naming the file and the
// mount, and starts nothing.
func TestConfigInWritableMountRefused(t *testing.T) {
	s := testutil.NewSandbox(t)
	proj := filepath.Join(s.Home, "proj")
	safe := filepath.Join(s.Home, "safe")
	sh := filepath.Join(s.Home, ".claude-home")
	mkUserDir(t, s, proj)
	mkUserDir(t, s, safe)
	mkUserDir(t, s, sh)
	os.Chmod(sh, 0o700)
	fix := ", which the sandbox can write: the agent could rewrite it: move the file out of it, or do not bind "
	tests := []struct {
		name  string
		setup func()
		want  string
	}{
		{"file in a rw project", func() {
			linkConfig(t, s, filepath.Join(proj, "dotfiles", "init"), "rw "+proj+"\n")
		}, "claude: ~/.claude-sandbox-init: " + filepath.Join(proj, "dotfiles", "init") + " lies in " + proj + fix + proj + " rw\n"},
		{"file in the sandbox home", func() {
			linkConfig(t, s, filepath.Join(sh, "init"), "ro /usr\n")
		}, "claude: ~/.claude-sandbox-init: " + filepath.Join(sh, "init") + " lies in " + sh + fix + sh + " rw\n"},
		{"symlink hop in a rw project", func() {
			linkConfig(t, s, filepath.Join(safe, "init"), "rw "+proj+"\n")
			hop := filepath.Join(proj, "hop")
			os.Remove(hop)
			os.Symlink(filepath.Join(safe, "init"), hop)
			s.User.Chown(t, hop)
			p := filepath.Join(s.Home, ".claude-sandbox-init")
			os.Remove(p)
			os.Symlink(hop, p)
			s.User.Chown(t, p)
		}, "claude: ~/.claude-sandbox-init: " + filepath.Join(proj, "hop") + " is a symlink in " + proj + ", which the sandbox can write: remove it (the agent may have made it) or name the real path\n"},
		{"file in a raw bwrap bind", func() {
			linkConfig(t, s, filepath.Join(proj, "dotfiles", "init"), "bwrap --bind "+proj+" /mnt\n")
		}, "claude: ~/.claude-sandbox-init: " + filepath.Join(proj, "dotfiles", "init") + " lies in " + proj + fix + proj + " rw\n"},
		{"file in a dev bind", func() {
			linkConfig(t, s, filepath.Join(proj, "dotfiles", "init"), "dev-try "+proj+" /mnt\n")
		}, "claude: ~/.claude-sandbox-init: " + filepath.Join(proj, "dotfiles", "init") + " lies in " + proj + fix + proj + " rw\n"},
		{"rw bind whose condition does not hold now", func() {
			linkConfig(t, s, filepath.Join(proj, "dotfiles", "init"), "if pwd-under /nonexistent\nrw "+proj+"\nend\n")
		}, "claude: ~/.claude-sandbox-init: " + filepath.Join(proj, "dotfiles", "init") + " lies in " + proj + fix + proj + " rw\n"},
		{"condition the agent decides", func() {
			s.WriteConfig(t, "rw "+proj+"\nif exists "+proj+"/.expose\n  ro "+safe+"\nend\n")
		}, "claude: ~/.claude-sandbox-init:2: exists: " + proj + "/.expose lies in " + proj + ", which the sandbox can write: the agent could decide this condition: test a path outside it\n"},
		{"rw of the real home", func() {
			s.WriteConfig(t, "rw "+s.Home+" /hosthome\n")
		}, "claude: ~/.claude-sandbox-init:1: rw: " + s.Home + " would expose your real home " + s.Home + " to the sandbox: name a directory of its own below it\n"},
		{"rw of a directory above the real home", func() {
			s.WriteConfig(t, "rw-try "+filepath.Dir(s.Home)+" /hosthome\n")
		}, "claude: ~/.claude-sandbox-init:1: rw-try: " + filepath.Dir(s.Home) + " would expose your real home " + s.Home + " to the sandbox: name a directory of its own below it\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.setup()
			r := s.Shell(t, "echo started")
			if r.Code != 2 || r.Stderr != tt.want || r.Stdout != "" {
				t.Errorf("%v\nwant exit 2 and stderr %q", r, tt.want)
			}
		})
	}
}

// TestKnobsCannotExposeHome: CLAUDE_SBX_TMP and CLAUDE_SBX_BINDIR, by name
// or through a symlink, and a sandbox home replaced by a symlink, must not
// bind the real home.
func TestKnobsCannotExposeHome(t *testing.T) {
	s := testutil.NewSandbox(t)
	writeUserFile(t, s, filepath.Join(s.Home, "bait"), "secret", 0o600)
	link := filepath.Join(testutil.PublicDir(t), "link")
	if err := os.Symlink(s.Home, link); err != nil {
		t.Fatal(err)
	}
	sh := filepath.Join(s.Home, ".claude-home")
	tests := []struct {
		name  string
		env   []string
		setup func()
		code  int
		want  string
	}{
		{"tmp is home", []string{"CLAUDE_SBX_TMP=" + s.Home}, nil, 2,
			"claude: CLAUDE_SBX_TMP=\"" + s.Home + "\": would expose your real home: want a directory of its own\n"},
		{"bindir above home", []string{"CLAUDE_SBX_BINDIR=" + filepath.Dir(s.Home)}, nil, 2,
			"claude: CLAUDE_SBX_BINDIR=\"" + filepath.Dir(s.Home) + "\": would expose your real home: want a directory of its own\n"},
		{"bindir through a symlink", []string{"CLAUDE_SBX_BINDIR=" + link}, func() {
			os.WriteFile(filepath.Join(s.Home, "claude"), []byte(testutil.FakeAgent), 0o755)
		}, 1, "claude: " + link + " would expose your real home " + s.Home + " to the sandbox: name a directory of its own below it\n"},
		{"sandbox home is a symlink", nil, func() {
			s.WriteConfig(t, "home shared\n")
			os.RemoveAll(sh)
			os.Symlink(s.Home, sh)
			s.User.Chown(t, sh)
		}, 1, "claude: sandbox home " + sh + " is a symlink (to \"" + s.Home + "\"), not a directory: remove it or set CLAUDE_SBX_HOME to use another\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.setup != nil {
				tt.setup()
			}
			s.Env = tt.env
			r := s.Shell(t, "echo started; cat ~/bait")
			if r.Code != tt.code || r.Stderr != tt.want || r.Stdout != "" {
				t.Errorf("%v\nwant exit %d and stderr %q", r, tt.code, tt.want)
			}
		})
	}
}

// TestDevBindInWritableMountRefused: bwrap binds dev mounts by path (there
// is no --dev-bind-fd), so one below a directory the agent can rename is
// refused.
func TestDevBindInWritableMountRefused(t *testing.T) {
	s := testutil.NewSandbox(t)
	proj := filepath.Join(s.Home, "proj")
	mkUserDir(t, s, filepath.Join(proj, "dev"))
	s.WriteConfig(t, "rw "+proj+"\ndev "+filepath.Join(proj, "dev")+" /mnt/dev\n")
	r := s.Shell(t, "echo started")
	want := "claude: ~/.claude-sandbox-init:2: dev: " + filepath.Join(proj, "dev") + " lies in " + proj + ", which the sandbox can write, and dev binds are made by path: name a path outside it\n"
	if r.Code != 2 || r.Stderr != want || r.Stdout != "" {
		t.Errorf("%v\nwant exit 2 and stderr %q", r, want)
	}
}

// swapper is a program, run as the test user, that swaps two names in
// its working directory with renameat2(RENAME_EXCHANGE) until killed: what
// an agent in a second sandbox can do to a project bound rw in both.
const swapper = `
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
a, b = sys.argv[1].encode(), sys.argv[2].encode()
while True:
    libc.renameat2(-100, a, -100, b, 2)
    time.sleep(0.0001)
`

// raceLaunches is how many launches TestBindSourceSwapRace runs.
const raceLaunches = 1000

// TestBindSourceSwapRace performs the swap race on a bind source: with the
// project bound rw and `ro-try PROJ/sub/inner`, a process of the user's
// swaps PROJ/sub with a directory whose `inner` is a symlink to a secret
// directory while launches run. No launch may mount the secret: each
// either mounts the intended directory or refuses (the launcher saw the
// symlink, or bwrap saw the swap after mounting).
func TestBindSourceSwapRace(t *testing.T) {
	s := testutil.NewSandbox(t)
	// The system's python (a pyenv shim in root's PATH is not the user's).
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		testutil.Missing(t, "%s: %v (apt install python3)", py, err)
	}
	m := marker(t)
	proj := filepath.Join(s.Home, "proj")
	secret := filepath.Join(s.Home, "secret")
	for _, d := range []string{proj, filepath.Join(proj, "sub"), filepath.Join(proj, "sub", "inner"), filepath.Join(proj, "evil")} {
		mkUserDir(t, s, d)
	}
	mkUserDir(t, s, secret)
	writeUserFile(t, s, filepath.Join(proj, "sub", "inner", "ok-"+m), "", 0o600)
	writeUserFile(t, s, filepath.Join(secret, "secret-"+m), "", 0o600)
	// Relative, so that it leads to the secret wherever the walk meets it,
	// bwrap's resolution after it has changed root included.
	evil := filepath.Join(proj, "evil", "inner")
	if err := os.Symlink("../../secret", evil); err != nil {
		t.Fatal(err)
	}
	s.User.Chown(t, evil)
	inner := filepath.Join(proj, "sub", "inner")
	s.WriteConfig(t, "rw "+proj+"\nro-try "+inner+" /var/tmp/x\n")

	sw := s.User.Command(proj, py, "-c", swapper, "sub", "evil")
	var swErr strings.Builder
	sw.Stderr = &swErr
	if err := sw.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sw.Process.Kill(); sw.Wait() }()
	// The swapper runs: both names keep existing, and sub changes.
	waitFor(t, "the swapper to swap", func() bool {
		if sw.ProcessState != nil || swErr.Len() > 0 {
			t.Fatalf("the swapper stopped: %s", swErr.String())
		}
		fi, err := os.Lstat(filepath.Join(proj, "sub", "inner"))
		return err == nil && fi.Mode()&os.ModeSymlink != 0
	})

	planted := "claude: ~/.claude-sandbox-init:2: ro-try: " + inner + " is a symlink in " + proj +
		", which the sandbox can write: remove it (the agent may have made it) or name the real path\n"
	// bwrap mounts by the path it reads from /proc/self/fd/N, then checks
	// that it mounted the fd's file.
	const race = "bwrap: Race condition binding dirfd: "
	gone := "bwrap: Can't get type of source " + inner + ": No such file or directory\n"
	notice := "claude: not using network namespacing: namespace " + testutil.NoNetns + " is not active\n" +
		"claude: " + sandbox.NoBudgetNotice + "\n" +
		"claude: the working directory " + s.Home + " is not visible in the sandbox: it is your home, which the sandbox never shows; start claude in a project directory below it\n"
	// Said in full once a day, in one short line otherwise.
	shortNotice := strings.Replace(notice, sandbox.NoBudgetNotice, sandbox.NoBudgetShort, 1)
	type result struct{ ok, planted, race, leaked int }
	const workers = 4
	results := make(chan result, workers)
	for w := 0; w < workers; w++ {
		go func() {
			var res result
			for i := 0; i < raceLaunches/workers; i++ {
				r := s.Shell(t, "ls /var/tmp/x")
				bw := strings.TrimPrefix(strings.TrimPrefix(r.Stderr, notice), shortNotice)
				switch {
				case strings.Contains(r.Stdout, "secret-"):
					res.leaked++
					t.Errorf("the secret directory was mounted: %v", r)
				case r.Code == 0 && r.Stdout == "ok-"+m+"\n":
					res.ok++
				case r.Code == 2 && r.Stderr == planted:
					res.planted++
				case r.Code == 1 && (strings.HasPrefix(bw, race) && strings.Count(bw, "\n") == 1 || bw == gone):
					res.race++
				default:
					t.Errorf("unexpected launch result: %v", r)
				}
			}
			results <- res
		}()
	}
	var total result
	for w := 0; w < workers; w++ {
		r := <-results
		total.ok += r.ok
		total.planted += r.planted
		total.race += r.race
		total.leaked += r.leaked
	}
	if sw.ProcessState != nil || swErr.Len() > 0 {
		t.Errorf("the swapper stopped: %s", swErr.String())
	}
	t.Logf("%d launches: %d mounted the intended directory, %d refused a symlink, %d stopped by bwrap, %d mounted the secret",
		raceLaunches, total.ok, total.planted, total.race, total.leaked)
	if total.leaked > 0 {
		t.Errorf("%d of %d launches mounted the secret", total.leaked, raceLaunches)
	}
	if total.ok == 0 {
		t.Errorf("no launch succeeded: the test did not exercise the bind")
	}
}

// TestBindFDsNotInside: the fds the binds are made from are O_PATH fds of
// host directories; one left open inside would let the agent walk out of
// the sandbox from it (openat(fd, "..")). bwrap closes them in every
// process the sandbox can see.
func TestBindFDsNotInside(t *testing.T) {
	s := testutil.NewSandbox(t)
	s.WriteConfig(t, "ro /etc /mnt/etc\nrw-try "+s.Home+"/proj\n")
	mkUserDir(t, s, filepath.Join(s.Home, "proj"))
	// Every fd of every process inside that names a file: only the
	// terminal-less stdio (/dev/null) and ls's own directory.
	r := s.Shell(t, `for p in /proc/[0-9]*; do for f in $p/fd/*; do l=$(readlink $f) && echo "$f $l"; done; done 2>/dev/null | grep ' /' | grep -v ' /dev/null$'; echo end`)
	mustOK(t, r)
	if r.Stdout != "end\n" {
		t.Errorf("files open inside besides stdio:\n%s", r.Stdout)
	}
}

// TestSymlinkUnderEveryWritableMountRefused: dev, dev-try and raw bwrap
// binds are writable mounts like rw: a symlink the agent planted under one
// is not followed to bind what it points at.
func TestSymlinkUnderEveryWritableMountRefused(t *testing.T) {
	s := testutil.NewSandbox(t)
	proj := filepath.Join(s.Home, "proj")
	secret := filepath.Join(s.Home, "secret")
	mkUserDir(t, s, proj)
	mkUserDir(t, s, secret)
	writeUserFile(t, s, filepath.Join(secret, "key"), "secret", 0o600)
	link := filepath.Join(proj, "link")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	s.User.Chown(t, link)
	for _, mount := range []string{"rw " + proj, "dev " + proj + " /mnt/p", "dev-try " + proj + " /mnt/p", "bwrap --bind " + proj + " /mnt/p", "bwrap --dev-bind-try " + proj + " /mnt/p"} {
		t.Run(mount, func(t *testing.T) {
			s.WriteConfig(t, mount+"\nro "+link+" /mnt/x\n")
			r := s.Shell(t, "echo started; cat /mnt/x/key")
			want := "claude: ~/.claude-sandbox-init:2: ro: " + link + " is a symlink in " + proj +
				", which the sandbox can write: remove it (the agent may have made it) or name the real path\n"
			if r.Code != 2 || r.Stderr != want || r.Stdout != "" {
				t.Errorf("%v\nwant exit 2 and stderr %q", r, want)
			}
		})
	}
}

// TestNothingCreatedThroughPlantedLink: the private tmp (and the sandbox
// home) are made by the launcher when missing; a symlink the agent planted
// on their way in a writable mount refuses the start before anything is
// made at its target.
func TestNothingCreatedThroughPlantedLink(t *testing.T) {
	s := testutil.NewSandbox(t)
	proj := filepath.Join(s.Home, "proj")
	target := filepath.Join(s.Home, "target")
	mkUserDir(t, s, proj)
	mkUserDir(t, s, target)
	link := filepath.Join(proj, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	s.User.Chown(t, link)
	s.WriteConfig(t, "rw "+proj+"\n")
	for _, knob := range []string{"CLAUDE_SBX_TMP", "CLAUDE_SBX_HOME"} {
		t.Run(knob, func(t *testing.T) {
			s.Env = []string{knob + "=" + filepath.Join(link, "made")}
			if knob == "CLAUDE_SBX_HOME" {
				// The shared home is made only where it is used.
				s.WriteConfig(t, "rw "+proj+"\nhome shared\n")
			}
			r := s.Shell(t, "echo started")
			want := "claude: " + link + " is a symlink in " + proj + ", which the sandbox can write: remove it (the agent may have made it) or name the real path\n"
			if r.Code != 1 || r.Stderr != want || r.Stdout != "" {
				t.Errorf("%v\nwant exit 1 and stderr %q", r, want)
			}
			if ents, _ := os.ReadDir(target); len(ents) != 0 {
				t.Errorf("made through the planted link: %v", ents)
			}
		})
	}
}
