package netnsenter

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// env is the setuid test setup: a setuid-root netns-enter whose whitelist
// lives in a root-owned directory under /run, namespaces listed in it, and
// the unprivileged test user.
type env struct {
	t         *testing.T
	user      testutil.User
	home      string
	bin       string // setuid copy, netnsenter_only build
	etc       string // its Sysconfdir
	whitelist string
	probe     string
	prefix    string // of every namespace name of this run
	ok, grp   string // whitelisted namespaces; grp restricted to @users
	okIno     uint64
	usersGid  uint32
}

func setup(t *testing.T) *env {
	t.Helper()
	u := testutil.RequireUser(t)
	for _, c := range []string{"ip", "mount", "umount", "unshare", "setpriv", "strace", "mkfifo", "setfacl"} {
		testutil.RequireCommand(t, c)
	}
	closeOnExecAbove2(t)
	e := &env{t: t, user: u, home: testutil.UserHome(t, u)}
	e.etc = filepath.Join(testutil.RootDir(t), "etc")
	if err := os.Mkdir(e.etc, 0o755); err != nil {
		t.Fatal(err)
	}
	e.whitelist = filepath.Join(e.etc, "netns-enter")
	e.bin = testutil.SetuidNetnsEnter(t, e.etc, false)
	e.probe = buildProbe(t)
	e.prefix = testutil.UniqueName("ne", 8)
	e.ok = e.prefix + "-ok"
	e.grp = e.prefix + "-grp"
	for _, n := range []string{e.ok, e.grp} {
		addNetns(t, n)
	}
	e.okIno = inode(t, "/run/netns/"+e.ok)
	g, err := lookupGroupFile("users")
	if err != nil {
		testutil.Missing(t, "group users: %v", err)
	}
	e.usersGid = g
	e.writeWhitelist(e.defaultWhitelist())
	return e
}

func (e *env) defaultWhitelist() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# test whitelist\n%s\n%s @users\n", e.ok, e.grp)
	for _, s := range []string{"file", "mnt", "host", "usr", "lnk", "none", "uts"} {
		fmt.Fprintf(&b, "%s-%s\n", e.prefix, s)
	}
	return b.String()
}

// writeWhitelist replaces the whitelist with a fresh root:root 0644 file.
func (e *env) writeWhitelist(text string) {
	e.t.Helper()
	os.Remove(e.whitelist)
	if err := os.WriteFile(e.whitelist, []byte(text), 0o644); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Chmod(e.whitelist, 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// run runs the setuid copy as the test user with groups (nil: none) and
// returns the result.
func (e *env) run(groups []uint32, extraEnv []string, args ...string) testutil.Result {
	e.t.Helper()
	cmd := e.user.Command(e.home, e.bin, args...)
	if groups == nil {
		groups = []uint32{}
	}
	cmd.SysProcAttr.Credential.Groups = groups
	cmd.Env = append(cmd.Env, extraEnv...)
	return testutil.RunCommand(e.t, cmd)
}

// underUser returns a runner of prog with its first arguments (ending with
// the setuid copy) and then the runner's, as the test user without groups.
func underUser(t *testing.T, e *env, prog string, first ...string) func(args ...string) testutil.Result {
	return func(args ...string) testutil.Result {
		cmd := e.user.Command(e.home, prog, slices.Concat(first, args)...)
		cmd.SysProcAttr.Credential.Groups = []uint32{}
		return testutil.RunCommand(t, cmd)
	}
}

// marker returns a path in the user's home that "touch" would create, and
// a check that it was not created.
func (e *env) marker(t *testing.T) (string, func()) {
	p := filepath.Join(e.home, "ran-"+strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()))
	os.Remove(p)
	return p, func() {
		t.Helper()
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("the command ran (%s exists)", p)
			os.Remove(p)
		}
	}
}

func (e *env) probeRun(t *testing.T, cmd *exec.Cmd) probeReport {
	t.Helper()
	r := testutil.RunCommand(t, cmd)
	if r.Code != 0 {
		t.Fatalf("probe through netns-enter: %s", r)
	}
	return parseProbe(t, r.Stdout)
}

type probeReport struct {
	Args   []string
	Netns  string
	Uids   [3]int
	Gids   [3]int
	Groups []int
	Status map[string]string
	Fds    map[int]string
	Env    []string
}

func parseProbe(t *testing.T, out string) probeReport {
	t.Helper()
	var p probeReport
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("probe output %q: %v", out, err)
	}
	return p
}

// checkProbe asserts what every command started by netns-enter must see.
func (e *env) checkProbe(t *testing.T, p probeReport, groups []int, env []string) {
	t.Helper()
	if want := fmt.Sprintf("net:[%d]", e.okIno); p.Netns != want {
		t.Errorf("netns inside = %s, want %s", p.Netns, want)
	}
	uid, gid := int(e.user.Uid), int(e.user.Gid)
	if p.Uids != [3]int{uid, uid, uid} || p.Gids != [3]int{gid, gid, gid} {
		t.Errorf("resuid/resgid = %v/%v, want all %d/%d", p.Uids, p.Gids, uid, gid)
	}
	if !cmp.Equal(p.Groups, groups) {
		t.Errorf("groups = %v, want the caller's %v", p.Groups, groups)
	}
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapAmb"} {
		if p.Status[k] != "0000000000000000" {
			t.Errorf("%s = %q, want 0", k, p.Status[k])
		}
	}
	if p.Status["NoNewPrivs"] != "1" {
		t.Errorf("NoNewPrivs = %q, want 1", p.Status["NoNewPrivs"])
	}
	if diff := cmp.Diff(env, p.Env); diff != "" {
		t.Errorf("environment changed (-caller +command):\n%s", diff)
	}
}

func TestSetuidHappyPath(t *testing.T) {
	e := setup(t)

	t.Run("credentials fds environment", func(t *testing.T) {
		f, err := os.Open("/dev/zero")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd := e.user.Command(e.home, e.bin, e.ok, "--", e.probe, "a b", "", "--")
		cmd.SysProcAttr.Credential.Groups = []uint32{}
		cmd.ExtraFiles = []*os.File{f}
		// Go's runtime rewrites GOTRACEBACK for setuid processes: the
		// command must still get the caller's value, and nothing added.
		cmd.Env = append(cmd.Env, "GOTRACEBACK=all", "EMPTY=", "TZ=:/nonexistent", "LC_ALL=C")
		p := e.probeRun(t, cmd)
		// groups []: initgroups (setpriv --init-groups) would re-add the
		// user's primary group 1001 as a supplementary group.
		e.checkProbe(t, p, []int{}, cmd.Env)
		if want := []string{"a b", "", "--"}; !cmp.Equal(p.Args, want) {
			t.Errorf("args = %q, want %q", p.Args, want)
		}
		if len(p.Fds) != 4 || p.Fds[0] != "/dev/null" || !strings.HasPrefix(p.Fds[1], "pipe:") ||
			!strings.HasPrefix(p.Fds[2], "pipe:") || p.Fds[3] != "/dev/zero" {
			t.Errorf("fds of the command = %v, want 0 /dev/null, 1 and 2 the caller's pipes, 3 /dev/zero and nothing else", p.Fds)
		}
	})

	t.Run("no GOTRACEBACK stays absent", func(t *testing.T) {
		cmd := e.user.Command(e.home, e.bin, "--netns="+e.ok, "--", e.probe)
		cmd.SysProcAttr.Credential.Groups = []uint32{}
		e.checkProbe(t, e.probeRun(t, cmd), []int{}, cmd.Env)
	})

	t.Run("supplementary groups kept exactly", func(t *testing.T) {
		cmd := e.user.Command(e.home, e.bin, e.ok, "--", e.probe)
		// users is not one of the test user's groups in /etc/group:
		// initgroups would drop it; the caller's set must be kept.
		cmd.SysProcAttr.Credential.Groups = []uint32{e.usersGid, e.user.Gid}
		e.checkProbe(t, e.probeRun(t, cmd), []int{int(e.usersGid), int(e.user.Gid)}, cmd.Env)
	})

	t.Run("group restriction satisfied", func(t *testing.T) {
		for _, c := range []struct {
			name   string
			gid    uint32
			groups []uint32
		}{
			{"supplementary", e.user.Gid, []uint32{e.usersGid}},
			{"real gid", e.usersGid, []uint32{}},
		} {
			cmd := e.user.Command(e.home, e.bin, e.grp, "--", "readlink", "/proc/self/ns/net")
			cmd.SysProcAttr.Credential.Gid = c.gid
			cmd.SysProcAttr.Credential.Groups = c.groups
			r := testutil.RunCommand(t, cmd)
			want := fmt.Sprintf("net:[%d]\n", inode(t, "/run/netns/"+e.grp))
			if r.Code != 0 || r.Stdout != want {
				t.Errorf("%s: %s, want %q", c.name, r, want)
			}
		}
	})

	t.Run("std fds closed", func(t *testing.T) {
		out := filepath.Join(e.home, "probe.json")
		cmd := e.user.Command(e.home, "/bin/sh", "-c", `exec "$0" "$@" <&- >&- 2>&-`, e.bin, e.ok, "--", e.probe, "-o", out)
		r := testutil.RunCommand(t, cmd)
		if r.Code != 0 {
			t.Fatalf("%s", r)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		p := parseProbe(t, string(data))
		// Go's runtime opens /dev/null on closed standard fds of a
		// setuid process (as glibc does), so nothing the helper opens
		// can become fd 0-2; the command inherits those.
		want := map[int]string{0: "/dev/null", 1: "/dev/null", 2: "/dev/null"}
		if !cmp.Equal(p.Fds, want) {
			t.Errorf("fds = %v, want %v", p.Fds, want)
		}
		if p.Netns != fmt.Sprintf("net:[%d]", e.okIno) {
			t.Errorf("netns = %s", p.Netns)
		}
	})

	t.Run("whitelist with a read-only ACL entry", func(t *testing.T) {
		setfacl(t, "-m", "u:"+e.user.Name+":r", e.whitelist)
		defer e.writeWhitelist(e.defaultWhitelist())
		r := e.run(nil, nil, e.ok, "--", "readlink", "/proc/self/ns/net")
		if want := fmt.Sprintf("net:[%d]\n", e.okIno); r.Code != 0 || r.Stdout != want {
			t.Errorf("%s, want %q", r, want)
		}
	})

	t.Run("openat2 denied by seccomp", func(t *testing.T) {
		// Container runtimes whose seccomp profile predates openat2
		// answer EPERM, not ENOSYS: the name is validated, so openat
		// with O_NOFOLLOW is as good.
		cmd := e.helper(t, []string{helperDenyEnv + "=1"}, e.bin, e.ok, "--", "readlink", "/proc/self/ns/net")
		r := testutil.RunCommand(t, cmd)
		if want := fmt.Sprintf("net:[%d]\n", e.okIno); r.Code != 0 || r.Stdout != want || r.Stderr != "" {
			t.Errorf("%s, want %q", r, want)
		}
	})

	t.Run("trap '' TERM stays ignored", func(t *testing.T) {
		cmd := e.user.Command(e.home, "/bin/sh", "-c", `trap "" TERM; exec "$0" "$1" -- sh -c 'kill -TERM $$; echo survived'`, e.bin, e.ok)
		cmd.SysProcAttr.Credential.Groups = []uint32{}
		if r := testutil.RunCommand(t, cmd); r.Code != 0 || r.Stdout != "survived\n" || r.Stderr != "" {
			t.Errorf("%s, want exit 0 and survived", r)
		}
	})

	t.Run("ignored and blocked signals as the caller left them", func(t *testing.T) {
		// Among them signals Go's runtime handles (HUP QUIT USR1 PIPE
		// TERM URG), unblocks (INT TERM CHLD PROF) or leaves alone (TSTP),
		// and 32 and 33, which glibc programs such as hyperfine hand their
		// children ignored and Go uses for its all-threads setresuid.
		settings := []string{helperIgnoreEnv + "=1,3,10,13,15,20,23,32,33", helperBlockEnv + "=2,12,14,15,17,27"}
		const wantIgn, wantBlk = 0x180485205, 0x4016802
		status := []string{"grep", "-E", "^Sig(Ign|Blk):", "/proc/self/status"}
		direct := testutil.RunCommand(t, e.helper(t, settings, status...))
		var ign, blk uint64
		if _, err := fmt.Sscanf(direct.Stdout, "SigBlk:\t%x\nSigIgn:\t%x\n", &blk, &ign); err != nil || direct.Code != 0 {
			t.Fatalf("the helper's own command: %s: %v", direct, err)
		}
		if ign&wantIgn != wantIgn || blk != wantBlk {
			t.Fatalf("the helper's own command has SigIgn %#x, SigBlk %#x, want %#x (at least) and %#x", ign, blk, wantIgn, wantBlk)
		}
		through := testutil.RunCommand(t, e.helper(t, settings, append([]string{e.bin, e.ok, "--"}, status...)...))
		if through.Code != 0 || through.Stdout != direct.Stdout {
			t.Errorf("through netns-enter: %s\nwant %q as without it", through, direct.Stdout)
		}
	})

	t.Run("RLIMIT_NPROC binds the runtime's start", func(t *testing.T) {
		// GOMAXPROCS=9000 makes Go's runtime start about 2000 threads
		// before main. They must count against the caller's limit, as
		// in any program the caller runs, not be made with root's
		// CAP_SYS_RESOURCE. The limit leaves room for a normal run and
		// for the user's other processes.
		limit := strconv.Itoa(userTasks(t, e.user.Uid) + 200)
		run := func(extra ...string) testutil.Result {
			cmd := e.user.Command(e.home, "prlimit", "--nproc="+limit, e.bin, e.ok, "--", "true")
			cmd.SysProcAttr.Credential.Groups = []uint32{}
			cmd.Env = append(cmd.Env, extra...)
			return testutil.RunCommand(t, cmd)
		}
		if r := run(); r.Code != 0 || r.Stderr != "" {
			t.Fatalf("with RLIMIT_NPROC %s: %s, want exit 0", limit, r)
		}
		r := run("GOMAXPROCS=9000")
		if r.Code != 2 || !strings.HasPrefix(r.Stderr, "runtime: failed to create new OS thread") {
			t.Errorf("GOMAXPROCS=9000 with RLIMIT_NPROC %s: %s\nwant exit 2 and the runtime's failed to create new OS thread", limit, r)
		}
	})

	t.Run("RLIMIT_SIGPENDING 0 does not hang it", func(t *testing.T) {
		// Go's all-threads setresuid signals every thread with signal 33
		// and waits until each has handled it; with the caller's
		// RLIMIT_SIGPENDING at 0 the signal cannot be queued and it
		// would wait for ever, root on one thread. RLIMIT_CPU ends such
		// a spin (SIGKILL) without a wall-clock timeout.
		cmd := e.user.Command(e.home, "prlimit", "--sigpending=0", "--cpu=10", e.bin, e.ok, "--", "readlink", "/proc/self/ns/net")
		cmd.SysProcAttr.Credential.Groups = []uint32{}
		r := testutil.RunCommand(t, cmd)
		if want := fmt.Sprintf("net:[%d]\n", e.okIno); r.Code != 0 || r.Stdout != want || r.Stderr != "" {
			t.Errorf("%s, want exit 0 and %q", r, want)
		}
	})

	t.Run("the runtime's start as the caller cannot be traced", func(t *testing.T) {
		// GODEBUG=inittrace=1 writes to stderr before main; a full pipe
		// holds the process there, euid the caller's, saved uid root.
		uid := strconv.Itoa(int(e.user.Uid))
		pid, wait := e.startHeld(t, []string{"GODEBUG=inittrace=1"}, statusHas(fmt.Sprintf("Uid:\t%[1]s\t%[1]s\t0\t%[1]s\n", uid)), e.ok, "--", "true")
		attack := underUser(t, e, "sh", "-c", `strace -p "$0" -o /dev/null; echo "strace $?"; for f in mem environ maps; do cat "/proc/$0/$f" >/dev/null || echo "$f refused"; done; ls "/proc/$0/fd" >/dev/null || echo "fd refused"`)
		res := attack(strconv.Itoa(pid))
		if err := wait(); err != nil {
			t.Errorf("netns-enter after the attack: %v", err)
		}
		want := fmt.Sprintf("strace: attach: ptrace(PTRACE_SEIZE, %[1]d): Operation not permitted\n"+
			"cat: /proc/%[1]d/mem: Permission denied\ncat: /proc/%[1]d/environ: Permission denied\n"+
			"cat: /proc/%[1]d/maps: Permission denied\nls: cannot open directory '/proc/%[1]d/fd': Permission denied\n", pid)
		if res.Stdout != "strace 1\nmem refused\nenviron refused\nmaps refused\nfd refused\n" || res.Stderr != want {
			t.Errorf("as the caller, against netns-enter in its start:\n%s\nwant every attempt refused:\n%s", res, want)
		}
	})

	t.Run("no thread is root while a refusal is written", func(t *testing.T) {
		// The refusal comes while root is held; it is written to a full
		// pipe, so the write blocks. By then the thread that held root
		// must have the caller's euid again, as every other thread,
		// however many the runtime made, and no effective capability.
		uid := strconv.Itoa(int(e.user.Uid))
		pid, wait := e.startHeld(t, []string{"GOMAXPROCS=64"}, writingStderr, e.prefix+"-nowl", "--", "true")
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range tasks {
			st, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(st), fmt.Sprintf("Uid:\t%[1]s\t%[1]s\t0\t%[1]s\n", uid)) || !strings.Contains(string(st), "CapEff:\t0000000000000000\n") {
				t.Errorf("thread %s, during the blocked write of the refusal, is not the caller (want euid %s and CapEff 0):\n%s", p, uid, st)
			}
		}
		if len(tasks) < 2 {
			t.Errorf("%d threads, want the runtime's several", len(tasks))
		}
		var ee *exec.ExitError
		if err := wait(); !errors.As(err, &ee) || ee.ExitCode() != multicall.ExitNotListed {
			t.Errorf("netns-enter: %v, want exit %d", err, multicall.ExitNotListed)
		}
	})

	t.Run("a refusal made as root is written as the caller", func(t *testing.T) {
		// Root writes to a setgid file without clearing the bit
		// (CAP_FSETID); the caller's write clears it. Stderr is a
		// group-writable setgid file of root's, group the caller's
		// (2>>FILE): after a refusal made while root is held the bit
		// is gone, as after any write of the caller's.
		f := filepath.Join(e.home, "setgid-log")
		reset := func() {
			t.Helper()
			if err := os.WriteFile(f, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			chown(t, f, 0, int(e.user.Gid))
			chmod(t, f, 0o2770)
			if !setgid(t, f) {
				t.Fatalf("%s: setgid bit not set", f)
			}
		}
		appendStderr := func(args ...string) testutil.Result {
			cmd := e.user.Command(e.home, "/bin/sh", append([]string{"-c", `f=$1; shift; exec "$@" 2>>"$f"`, "sh", f}, args...)...)
			cmd.SysProcAttr.Credential.Groups = []uint32{}
			return testutil.RunCommand(t, cmd)
		}
		// The control: the caller's own write clears the bit.
		reset()
		if r := appendStderr("sh", "-c", "echo control >&2"); r.Code != 0 || setgid(t, f) {
			t.Fatalf("the caller's own write to %s: %s; setgid bit still set: %v (the filesystem does not clear it)", f, r, setgid(t, f))
		}
		reset()
		n := e.prefix + "-nowl"
		r := appendStderr(e.bin, n, "--", "true")
		got, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("netns-enter: namespace %s is not in the whitelist %s\n", n, e.whitelist); r.Code != multicall.ExitNotListed || string(got) != want {
			t.Errorf("%s, %s has %q; want exit %d and %q", r, f, got, multicall.ExitNotListed, want)
		}
		if setgid(t, f) {
			t.Errorf("%s kept its setgid bit: netns-enter wrote its refusal with root's CAP_FSETID, not as the caller", f)
		}
	})

	t.Run("1000 runs land in the namespace", func(t *testing.T) {
		want := fmt.Sprintf("net:[%d]\n", e.okIno)
		for i := 0; i < 1000; i++ {
			r := e.run(nil, nil, e.ok, "--", "readlink", "/proc/self/ns/net")
			if r.Code != 0 || r.Stdout != want || r.Stderr != "" {
				t.Fatalf("run %d: %s, want %q", i, r, want)
			}
		}
	})

	t.Run("argv0 of another applet is still netns-enter", func(t *testing.T) {
		for _, name := range []string{"claude", "claude-update", "netns-setup", "claude-sandbox", "x"} {
			cmd := e.user.Command(e.home, e.bin, e.ok, "--", "readlink", "/proc/self/ns/net")
			cmd.Args[0] = name
			cmd.SysProcAttr.Credential.Groups = []uint32{}
			r := testutil.RunCommand(t, cmd)
			if want := fmt.Sprintf("net:[%d]\n", e.okIno); r.Code != 0 || r.Stdout != want {
				t.Errorf("argv[0]=%s: %s, want %q", name, r, want)
			}
		}
	})

	t.Run("GODEBUG GOTRACEBACK TZ: no privileged open", func(t *testing.T) {
		canary := filepath.Join(filepath.Dir(e.etc), "canary")
		if err := os.WriteFile(canary, []byte("TZif"), 0o600); err != nil {
			t.Fatal(err)
		}
		trace := filepath.Join(t.TempDir(), "strace")
		extra := []string{"GODEBUG=inittrace=1,gctrace=1", "GOTRACEBACK=crash", "TZ=" + canary, "ZONEINFO=" + canary}
		// Root's strace -u runs the command as the user and, being
		// privileged, keeps setuid effective, so it sees the helper's
		// privileged opens.
		cmd := exec.Command("strace", "-f", "-qq", "-o", trace, "-e", "trace=open,openat,openat2,creat,execve",
			"-u", e.user.Name, e.bin, e.ok, "--", e.probe)
		cmd.Env = append(e.user.Command(e.home, "x").Env, extra...)
		cmd.Dir = e.home
		r := testutil.RunCommand(t, cmd)
		if r.Code != 0 {
			t.Fatalf("%s", r)
		}
		p := parseProbe(t, r.Stdout)
		for _, kv := range extra {
			if !contains(p.Env, kv) {
				t.Errorf("%s did not reach the command unchanged: %q", kv, p.Env)
			}
		}
		if p.Netns != fmt.Sprintf("net:[%d]", e.okIno) {
			t.Errorf("netns = %s", p.Netns)
		}
		data, err := os.ReadFile(trace)
		if err != nil {
			t.Fatal(err)
		}
		tr := string(data)
		if !strings.Contains(tr, `"netns-enter", O_RDONLY`) || !strings.Contains(tr, `"`+e.ok+`", {flags=O_RDONLY`) {
			t.Fatalf("strace did not see the privileged opens of the whitelist and the namespace:\n%s", tr)
		}
		if strings.Contains(tr, canary) {
			t.Errorf("the canary %s was opened:\n%s", canary, tr)
		}
	})
}

func TestSetuidHostile(t *testing.T) {
	e := setup(t)
	const usage = "usage: netns-enter [--netns=]NAME -- CMD [ARGS...]"
	const nameRule = ": use 1 to 15 characters of a-z, 0-9, '-' or '_', starting with a letter or digit"
	wl := e.whitelist
	pfx := e.prefix
	count := 0

	// check runs args (with MARK replaced by a marker path) and asserts
	// exactly one line "netns-enter: want" on stderr, the code, and that
	// the command did not run.
	check := func(t *testing.T, code int, want string, r func(args ...string) testutil.Result, args ...string) {
		t.Helper()
		count++
		mark, notRan := e.marker(t)
		for i := range args {
			args[i] = strings.ReplaceAll(args[i], "MARK", mark)
		}
		res := r(args...)
		if res.Stderr != "netns-enter: "+want+"\n" || res.Code != code || res.Stdout != "" {
			t.Errorf("netns-enter %q:\n%s\nwant exit %d, stderr %q", args, res, code, "netns-enter: "+want)
		}
		notRan()
	}
	asUser := func(args ...string) testutil.Result { return e.run(nil, nil, args...) }
	touch := []string{"--", "touch", "MARK"}
	with := func(name string) []string { return append([]string{name}, touch...) }

	names := []struct {
		name, in string
	}{
		{"dotdot", ".."},
		{"proc path", "../../proc/1/ns/net"},
		{"slash", "a/b"},
		{"empty", ""},
		{"300 chars", strings.Repeat("a", 300)},
		{"trailing cr", e.ok + "\r"},
		{"upper case", strings.ToUpper(e.ok)},
		{"unicode", "agénts"},
	}
	for _, n := range names {
		t.Run("name "+n.name, func(t *testing.T) {
			shown := n.in
			if len(shown) > 64 {
				shown = shown[:64] + "..."
			}
			check(t, 2, fmt.Sprintf("invalid namespace name %q%s", shown, nameRule), asUser, with(n.in)...)
		})
	}
	t.Run("missing --", func(t *testing.T) {
		check(t, 2, "missing -- after NAME: "+usage, asUser, e.ok, "touch", "MARK")
	})
	t.Run("--help -- x", func(t *testing.T) {
		check(t, 2, `unknown option "--help": `+usage, asUser, "--help", "--", "touch", "MARK")
	})
	t.Run("no command", func(t *testing.T) {
		check(t, 2, "missing CMD after --: "+usage, asUser, e.ok, "--")
	})
	t.Run("not whitelisted", func(t *testing.T) {
		n := pfx + "-nowl"
		check(t, multicall.ExitNotListed, fmt.Sprintf("namespace %s is not in the whitelist %s", n, wl), asUser, with(n)...)
	})
	t.Run("prefix of a whitelisted name", func(t *testing.T) {
		n := e.ok[:len(e.ok)-1]
		check(t, multicall.ExitNotListed, fmt.Sprintf("namespace %s is not in the whitelist %s", n, wl), asUser, with(n)...)
	})
	t.Run("not a member of the group", func(t *testing.T) {
		check(t, multicall.ExitNotMember, "not a member of group users", asUser, with(e.grp)...)
	})
	t.Run("not active", func(t *testing.T) {
		check(t, multicall.ExitNotActive, fmt.Sprintf("namespace %[1]s-none is not active: systemctl start netns@%[1]s-none", pfx), asUser, with(pfx+"-none")...)
	})

	t.Run("command not found", func(t *testing.T) {
		check(t, 1, "nosuchcmd-"+pfx+": command not found in PATH", asUser, e.ok, "--", "nosuchcmd-"+pfx, "MARK")
	})
	t.Run("command name with an escape sequence", func(t *testing.T) {
		// The caller's name is printed quoted: it cannot drive the
		// terminal or forge a line.
		check(t, 1, `"x\x1b]0;t\ay\nnetns-enter: ok": command not found in PATH`, asUser, e.ok, "--", "x\x1b]0;t\ay\nnetns-enter: ok", "MARK")
	})

	// Whitelist attacks: each mutates the file or its directory, then
	// restores the default.
	wlCases := []struct {
		name  string
		setup func(t *testing.T)
		want  string
	}{
		{"whitelist world-writable", func(t *testing.T) { chmod(t, wl, 0o646) },
			fmt.Sprintf("whitelist %[1]s is writable by others: chmod o-w %[1]s", wl)},
		{"whitelist group-writable", func(t *testing.T) { chown(t, wl, 0, int(e.usersGid)); chmod(t, wl, 0o664) },
			fmt.Sprintf("whitelist %[1]s is writable by group %[2]d: chmod g-w %[1]s", wl, e.usersGid)},
		{"whitelist group-writable by gid 0", func(t *testing.T) { chmod(t, wl, 0o664) },
			fmt.Sprintf("whitelist %[1]s is writable by group 0: chmod g-w %[1]s", wl)},
		{"whitelist ACL grants the user write", func(t *testing.T) { setfacl(t, "-m", "u:"+e.user.Name+":rw", wl) },
			fmt.Sprintf("whitelist %[1]s has an ACL entry granting write to uid %[2]d: setfacl -b %[1]s", wl, e.user.Uid)},
		{"whitelist ACL grants a group write, masked", func(t *testing.T) {
			setfacl(t, "-m", fmt.Sprintf("g:%d:rw", e.usersGid), wl)
			chmod(t, wl, 0o644) // the mask: nobody may write today
		}, fmt.Sprintf("whitelist %[1]s has an ACL entry granting write to gid %[2]d: setfacl -b %[1]s", wl, e.usersGid)},
		{"whitelist directory ACL grants the user write", func(t *testing.T) {
			setfacl(t, "-m", "u:"+e.user.Name+":rwx", e.etc)
			t.Cleanup(func() { setfacl(t, "-b", e.etc) })
		}, fmt.Sprintf("whitelist %[1]s: directory %[2]s has an ACL entry granting write to uid %[3]d: setfacl -b %[2]s", wl, e.etc, e.user.Uid)},
		{"whitelist owned by the user", func(t *testing.T) { e.user.Chown(t, wl) },
			fmt.Sprintf("whitelist %[1]s is owned by uid %[2]d, not root: chown root:root %[1]s", wl, e.user.Uid)},
		{"whitelist a symlink", func(t *testing.T) {
			other := filepath.Join(filepath.Dir(e.etc), "real")
			if err := os.WriteFile(other, []byte(e.defaultWhitelist()), 0o644); err != nil {
				t.Fatal(err)
			}
			os.Remove(wl)
			if err := os.Symlink(other, wl); err != nil {
				t.Fatal(err)
			}
		}, fmt.Sprintf("whitelist %s is a symlink: replace it with a regular file", wl)},
		{"whitelist a fifo", func(t *testing.T) {
			os.Remove(wl)
			if err := unix.Mkfifo(wl, 0o644); err != nil {
				t.Fatal(err)
			}
		}, fmt.Sprintf("whitelist %s is not a regular file", wl)},
		{"whitelist huge", func(t *testing.T) {
			e.writeWhitelist(e.defaultWhitelist() + "#" + strings.Repeat("x", maxWhitelistSize) + "\n")
		}, fmt.Sprintf("whitelist %s is larger than %d bytes", wl, maxWhitelistSize)},
		{"whitelist missing", func(t *testing.T) { os.Remove(wl) },
			fmt.Sprintf("whitelist %s does not exist: run make install-network", wl)},
		{"whitelist bad line", func(t *testing.T) { e.writeWhitelist(e.ok + "\n" + e.ok + " extra fields here\n") },
			fmt.Sprintf("whitelist %s:2: want NAME or NAME @GROUP, got 4 fields", wl)},
		{"whitelist unknown group", func(t *testing.T) { e.writeWhitelist(e.ok + " @" + pfx + "nogroup\n") },
			fmt.Sprintf("whitelist %s:1: group %snogroup not found in /etc/group", wl, pfx)},
		{"whitelist in a world-writable directory", func(t *testing.T) { chmod(t, e.etc, 0o777) },
			fmt.Sprintf("whitelist %[1]s: directory %[2]s is writable by group 0: chmod g-w %[2]s", wl, e.etc)},
		{"whitelist in a sticky tmp-like directory", func(t *testing.T) { chmod(t, e.etc, 0o1757) },
			fmt.Sprintf("whitelist %[1]s: directory %[2]s is writable by others: chmod o-w %[2]s", wl, e.etc)},
		{"whitelist in a user-owned directory", func(t *testing.T) { e.user.Chown(t, e.etc) },
			fmt.Sprintf("whitelist %[1]s: directory %[2]s is owned by uid %[3]d, not root: chown root:root %[2]s", wl, e.etc, e.user.Uid)},
		{"whitelist below a user-owned directory", func(t *testing.T) { e.user.Chown(t, filepath.Dir(e.etc)) },
			fmt.Sprintf("whitelist %[1]s: directory %[2]s is owned by uid %[3]d, not root: chown root:root %[2]s", wl, filepath.Dir(e.etc), e.user.Uid)},
	}
	for _, c := range wlCases {
		t.Run(c.name, func(t *testing.T) {
			c.setup(t)
			defer func() {
				chown(t, e.etc, 0, 0)
				chown(t, filepath.Dir(e.etc), 0, 0)
				chmod(t, e.etc, 0o755)
				e.writeWhitelist(e.defaultWhitelist())
			}()
			code := multicall.ExitFailure
			if c.name == "whitelist missing" {
				code = multicall.ExitNoWhitelist
			}
			check(t, code, c.want, asUser, with(e.ok)...)
		})
	}

	// Target attacks under /run/netns.
	t.Run("target a plain file", func(t *testing.T) {
		n := pfx + "-file"
		p := "/run/netns/" + n
		if err := os.WriteFile(p, nil, 0o444); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(p)
		check(t, multicall.ExitNotActive, fmt.Sprintf("%s is not a namespace: systemctl restart netns@%s", p, n), asUser, with(n)...)
	})
	t.Run("target a symlink to a namespace", func(t *testing.T) {
		n := pfx + "-lnk"
		p := "/run/netns/" + n
		if err := os.Symlink("/run/netns/"+e.ok, p); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(p)
		check(t, 1, p+" is a symlink, not a namespace", asUser, with(n)...)
	})
	t.Run("target a bind of a mount namespace", func(t *testing.T) {
		n := pfx + "-mnt"
		p := "/run/netns/" + n
		if err := os.WriteFile(p, nil, 0o444); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(p)
		// The kernel refuses (EINVAL) to bind a mount namespace file where
		// the mount would propagate to another mount namespace, and
		// /run/netns is shared with every "ip netns exec" and unshare
		// running on the machine. So the bind and the run happen in a
		// private mount namespace, and the namespace bound is made inside
		// it, after it: an older one cannot be bound (mnt_ns_loop). Linux
		// 6.18 hands out namespace ids from per-CPU batches, so "after"
		// is not always a larger id: retry with a fresh namespace.
		const script = `n=0
while :; do
	unshare --mount --propagation private sleep 600 & pid=$!
	i=0; while [ "$(cat /proc/$pid/comm 2>/dev/null)" != sleep ]; do i=$((i+1)); [ $i -lt 1000 ] || exit 99; sleep 0.01; done
	mount --bind /proc/$pid/ns/mnt "$0" 2>/dev/null && break
	kill $pid; n=$((n+1)); [ $n -lt 50 ] || { echo "cannot bind a mount namespace" >&2; exit 98; }
done
setpriv --reuid "$U" --regid "$G" --clear-groups "$@"; rc=$?; kill $pid; exit $rc`
		run := func(args ...string) testutil.Result {
			cmd := exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "sh", "-c", script, p, e.bin}, args...)...)
			cmd.Env = []string{"PATH=/usr/bin:/bin", fmt.Sprintf("U=%d", e.user.Uid), fmt.Sprintf("G=%d", e.user.Gid)}
			cmd.Dir = e.home
			return testutil.RunCommand(t, cmd)
		}
		check(t, 1, fmt.Sprintf("%s is not a network namespace", p), run, with(n)...)
	})
	t.Run("no /proc", func(t *testing.T) {
		// A mount namespace of the test's own with an empty /proc: the
		// checks of the caller's namespaces cannot be made, and it says
		// what is missing.
		noProc := func(args ...string) testutil.Result {
			cmd := exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "sh", "-c",
				`mount -t tmpfs none /proc && exec setpriv --reuid "$U" --regid "$G" --clear-groups "$@"`, "sh", e.bin}, args...)...)
			cmd.Env = []string{"PATH=/usr/bin:/bin", fmt.Sprintf("U=%d", e.user.Uid), fmt.Sprintf("G=%d", e.user.Gid)}
			cmd.Dir = e.home
			return testutil.RunCommand(t, cmd)
		}
		check(t, 1, "open /proc/self/ns/user: no such file or directory: netns-enter needs /proc (mount -t proc proc /proc)", noProc, with(e.ok)...)
	})
	t.Run("target a bind of a uts namespace", func(t *testing.T) {
		n := pfx + "-uts"
		bindNs(t, "/proc/self/ns/uts", n)
		check(t, 1, fmt.Sprintf("/run/netns/%s is not a network namespace", n), asUser, with(n)...)
	})
	t.Run("target a bind of the host netns", func(t *testing.T) {
		n := pfx + "-host"
		if inode(t, "/proc/self/ns/net") != inode(t, "/proc/2/ns/net") {
			t.Skip("the test does not run in the host's network namespace")
		}
		bindNs(t, "/proc/self/ns/net", n)
		check(t, 1, fmt.Sprintf("/run/netns/%s is the host's network namespace", n), asUser, with(n)...)
	})
	t.Run("target a netns owned by a user namespace", func(t *testing.T) {
		n := pfx + "-usr"
		pid := spawn(t, "unshare", "-Urn", "sleep", "600")
		waitNs(t, pid, "net")
		bindNs(t, fmt.Sprintf("/proc/%d/ns/net", pid), n)
		check(t, 1, fmt.Sprintf("/run/netns/%s is owned by a user namespace other than the host's", n), asUser, with(n)...)
	})

	// Who is calling.
	t.Run("argv0 of every other applet", func(t *testing.T) {
		for _, name := range []string{"claude", "claude-update", "netns-setup", "claude-sandbox", "/usr/local/bin/claude", ""} {
			run := func(args ...string) testutil.Result {
				cmd := e.user.Command(e.home, e.bin, args...)
				cmd.Args[0] = name
				cmd.SysProcAttr.Credential.Groups = []uint32{}
				return testutil.RunCommand(t, cmd)
			}
			check(t, 2, `unknown option "--shell": `+usage, run, "--shell", "-c", "touch MARK")
			check(t, 2, `unknown option "--list": `+usage, run, "--list")
		}
	})
	t.Run("real uid 0", func(t *testing.T) {
		root := func(args ...string) testutil.Result {
			cmd := exec.Command(e.bin, args...)
			cmd.Env = []string{"PATH=/usr/bin:/bin"}
			return testutil.RunCommand(t, cmd)
		}
		check(t, 1, "run by root: root needs no helper, use ip netns exec "+e.ok, root, with(e.ok)...)
	})
	t.Run("not setuid", func(t *testing.T) {
		plain := filepath.Join(filepath.Dir(e.bin), "plain", "netns-enter")
		testutil.CopyFile(t, e.bin, plain, 0o755)
		run := func(args ...string) testutil.Result {
			cmd := e.user.Command(e.home, plain, args...)
			cmd.SysProcAttr.Credential.Groups = []uint32{}
			return testutil.RunCommand(t, cmd)
		}
		check(t, multicall.ExitNotSetuid, "netns-enter must be installed setuid root: run make install-network", run, with(e.ok)...)
	})
	t.Run("linked without the entry point", func(t *testing.T) {
		// It could not keep the caller's signals, nor start the runtime
		// as the caller: it refuses before anything else.
		plain := filepath.Join(testutil.PublicDir(t), "netns-enter")
		build := exec.Command("go", "build", "-trimpath", "-tags", "netnsenter_only", "-o", plain, "./cmd/multicall")
		build.Dir = testutil.ModuleRoot(t)
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v: %s", err, out)
		}
		run := func(args ...string) testutil.Result {
			cmd := e.user.Command(e.home, plain, args...)
			cmd.SysProcAttr.Credential.Groups = []uint32{}
			return testutil.RunCommand(t, cmd)
		}
		check(t, 1, errNoEntry.Error(), run, with(e.ok)...)
	})
	t.Run("stdin and stdout closed", func(t *testing.T) {
		run := func(args ...string) testutil.Result {
			cmd := e.user.Command(e.home, "/bin/sh", append([]string{"-c", `exec "$0" "$@" <&- >&-`, e.bin}, args...)...)
			cmd.SysProcAttr.Credential.Groups = []uint32{}
			return testutil.RunCommand(t, cmd)
		}
		n := pfx + "-nowl"
		check(t, multicall.ExitNotListed, fmt.Sprintf("namespace %s is not in the whitelist %s", n, wl), run, with(n)...)
	})
	t.Run("all std fds closed", func(t *testing.T) {
		count++
		mark, notRan := e.marker(t)
		before, _ := os.ReadFile(wl)
		cmd := e.user.Command(e.home, "/bin/sh", "-c", `exec "$0" "$@" <&- >&- 2>&-`, e.bin, pfx+"-nowl", "--", "touch", mark)
		r := testutil.RunCommand(t, cmd)
		if r.Code != multicall.ExitNotListed || r.Stdout != "" || r.Stderr != "" {
			t.Errorf("%s, want exit %d and nothing written", r, multicall.ExitNotListed)
		}
		if after, _ := os.ReadFile(wl); string(after) != string(before) {
			t.Errorf("whitelist changed with std fds closed: %q", after)
		}
		notRan()
	})
	t.Run("GODEBUG GOTRACEBACK TZ set", func(t *testing.T) {
		run := func(args ...string) testutil.Result {
			return e.run(nil, []string{"GODEBUG=madvdontneed=1", "GOTRACEBACK=crash", "TZ=/root/canary"}, args...)
		}
		n := pfx + "-nowl"
		check(t, multicall.ExitNotListed, fmt.Sprintf("namespace %s is not in the whitelist %s", n, wl), run, with(n)...)
	})
	t.Run("strace by the user", func(t *testing.T) {
		run := underUser(t, e, "strace", "-f", "-o", "/dev/null", e.bin)
		check(t, multicall.ExitNotSetuid, "netns-enter must be installed setuid root: run make install-network", run, with(e.ok)...)
	})
	t.Run("no_new_privs via setpriv", func(t *testing.T) {
		run := underUser(t, e, "setpriv", "--no-new-privs", e.bin)
		check(t, multicall.ExitNoNewPrivs, errNoNewPrivs.Error(), run, with(e.ok)...)
	})
	t.Run("inside bwrap", func(t *testing.T) {
		bwrap := testutil.RequireCommand(t, "bwrap")
		run := underUser(t, e, bwrap, "--dev-bind", "/", "/", "--unshare-user", "--unshare-pid", "--proc", "/proc", "--die-with-parent", e.bin)
		check(t, multicall.ExitNoNewPrivs, errNoNewPrivs.Error(), run, with(e.ok)...)
	})
	t.Run("root of the user's own user namespace", func(t *testing.T) {
		// unshare -Ur: uid 0 inside, the user outside; the setuid bit
		// does nothing there (root is not mapped).
		run := underUser(t, e, "unshare", "-Ur", e.bin)
		check(t, 1, errUserns.Error(), run, with(e.ok)...)
	})
	t.Run("child user namespace that maps root", func(t *testing.T) {
		run := func(args ...string) testutil.Result {
			// A user namespace made by root that maps uid 0 (as a
			// privileged container would): setuid works there, but the
			// capabilities are the child namespace's.
			cmd := exec.Command("setpriv", append([]string{"--reuid", strconv.Itoa(int(e.user.Uid)), "--regid", strconv.Itoa(int(e.user.Gid)), "--clear-groups", e.bin}, args...)...)
			cmd.SysProcAttr = &syscall.SysProcAttr{
				Cloneflags:                 syscall.CLONE_NEWUSER,
				UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 65536}},
				GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 65536}},
				GidMappingsEnableSetgroups: true,
			}
			cmd.Env = []string{"PATH=/usr/bin:/bin"}
			cmd.Dir = e.home
			return testutil.RunCommand(t, cmd)
		}
		check(t, 1, errUserns.Error(), run, with(e.ok)...)
	})
	if count < 25 && !strings.Contains(flag.Lookup("test.run").Value.String(), "/") {
		t.Errorf("only %d hostile inputs ran, want at least 25", count)
	}
	t.Logf("%d hostile inputs", count)
}

// startHeld starts the setuid copy as the test user without groups, with
// extraEnv, and its stderr a full pipe, so that its first write there
// blocks; it waits until held(pid) is true. It returns the pid and a
// function that drains the pipe and waits for the process.
func (e *env) startHeld(t *testing.T, extraEnv []string, held func(pid int) bool, args ...string) (int, func() error) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		t.Fatal(err)
	}
	r, w := os.NewFile(uintptr(p[0]), "r"), os.NewFile(uintptr(p[1]), "w")
	t.Cleanup(func() { r.Close() })
	for {
		if _, err := unix.Write(p[1], make([]byte, 4096)); err == unix.EAGAIN {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.SetNonblock(p[1], false); err != nil {
		t.Fatal(err)
	}
	cmd := e.user.Command(e.home, e.bin, args...)
	cmd.SysProcAttr.Credential.Groups = []uint32{}
	cmd.Env = append(cmd.Env, extraEnv...)
	cmd.Stderr = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	pid := cmd.Process.Pid
	for i := 0; !held(pid); i++ {
		if i == 3000 {
			st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("netns-enter did not block as expected:\n%s", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return pid, func() error {
		go io.Copy(io.Discard, r)
		return cmd.Wait()
	}
}

// statusHas returns a startHeld condition: /proc/PID/status contains
// status and the process sleeps.
func statusHas(status string) func(pid int) bool {
	return func(pid int) bool {
		st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		return strings.Contains(string(st), status) && strings.Contains(string(st), "State:\tS")
	}
}

// writingStderr is a startHeld condition: a thread of pid is in write(2)
// on fd 2 (/proc/PID/task/TID/syscall: the number, then the arguments).
func writingStderr(pid int) bool {
	calls, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/syscall", pid))
	for _, p := range calls {
		b, _ := os.ReadFile(p)
		if strings.HasPrefix(string(b), fmt.Sprintf("%d 0x2 ", unix.SYS_WRITE)) {
			return true
		}
	}
	return false
}

// setgid reports whether file p has its setgid bit.
func setgid(t *testing.T, p string) bool {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Mode&unix.S_ISGID != 0
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func chmod(t *testing.T, p string, mode uint32) {
	t.Helper()
	if err := unix.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// setfacl runs setfacl(1) with args.
func setfacl(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("setfacl", args...).CombinedOutput(); err != nil {
		t.Fatalf("setfacl %q: %v: %s", args, err, out)
	}
}

func chown(t *testing.T, p string, uid, gid int) {
	t.Helper()
	if err := os.Lchown(p, uid, gid); err != nil {
		t.Fatal(err)
	}
}

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// addNetns makes /run/netns/name with ip netns add, deleted at the end.
func addNetns(t *testing.T, name string) {
	t.Helper()
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
}

// bindNs bind-mounts src at /run/netns/name, removed at the end.
func bindNs(t *testing.T, src, name string) {
	t.Helper()
	if _, err := os.Stat("/run/netns"); err != nil {
		t.Fatal(err)
	}
	p := "/run/netns/" + name
	if err := os.WriteFile(p, nil, 0o444); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		exec.Command("umount", p).Run()
		os.Remove(p)
	})
	if out, err := exec.Command("mount", "--bind", src, p).CombinedOutput(); err != nil {
		t.Fatalf("mount --bind %s %s: %v: %s", src, p, err, out)
	}
}

// spawn starts a long-running root process, killed at the end.
func spawn(t *testing.T, name string, args ...string) int {
	t.Helper()
	cmd := exec.Command(name, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

// waitNs waits until process pid is in a namespace of kind other than ours
// (unshare has done its work).
func waitNs(t *testing.T, pid int, kind string) {
	t.Helper()
	self, _ := os.Readlink("/proc/self/ns/" + kind)
	for i := 0; i < 500; i++ {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, kind)); err == nil && l != self {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d did not enter a new %s namespace", pid, kind)
}

// userTasks counts the tasks (threads) whose real uid is uid: what
// RLIMIT_NPROC counts.
func userTasks(t *testing.T, uid uint32) int {
	t.Helper()
	paths, err := filepath.Glob("/proc/[0-9]*/task/[0-9]*/status")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			continue // exited
		}
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" && f[1] == strconv.Itoa(int(uid)) {
				n++
			}
		}
	}
	return n
}

// lookupGroupFile returns a group's gid from /etc/group.
func lookupGroupFile(name string) (uint32, error) {
	data, err := os.ReadFile("/etc/group")
	if err != nil {
		return 0, err
	}
	return lookupGroup(data, name)
}

// buildProbe builds testdata/probe where the test user can run it.
func buildProbe(t *testing.T) string {
	t.Helper()
	out := filepath.Join(testutil.PublicDir(t), "probe")
	cmd := exec.Command("go", "build", "-o", out, "./testdata/probe")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build probe: %v: %s", err, b)
	}
	return out
}

// closeOnExecAbove2 marks every descriptor above 2 that the test process
// inherited close-on-exec, so none reaches the commands it starts (Go's
// exec passes inherited descriptors on) and the fd checks see only theirs.
func closeOnExecAbove2(t *testing.T) {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, ent := range ents {
		if fd, err := strconv.Atoi(ent.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}

// Settings of the helper process (TestHelperExec), passed in its
// environment; they reach the command it executes too, harmlessly.
const (
	helperAsEnv     = "NETNS_ENTER_TEST_AS"           // UID:GID; set: run as the helper
	helperDenyEnv   = "NETNS_ENTER_TEST_DENY_OPENAT2" // 1: openat2 fails with EPERM
	helperIgnoreEnv = "NETNS_ENTER_TEST_SIGIGN"       // signals to ignore, e.g. 1,15
	helperBlockEnv  = "NETNS_ENTER_TEST_SIGBLK"       // signals to block
)

// helper returns the helper process that executes args as the test user
// after applying settings (helper*Env=value).
func (e *env) helper(t *testing.T, settings []string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestHelperExec$", "--"}, args...)...)
	cmd.Env = append(e.user.Command(e.home, "x").Env, fmt.Sprintf("%s=%d:%d", helperAsEnv, e.user.Uid, e.user.Gid))
	cmd.Env = append(cmd.Env, settings...)
	cmd.Dir = e.home
	return cmd
}

// TestHelperExec is not a test. As a helper (helperAsEnv set), it starts as
// root, sets up what the helper*Env variables ask for, becomes UID:GID
// without supplementary groups and executes the arguments after "--" from
// the same thread.
//
// A seccomp filter (helperDenyEnv) is inherited across the setuid execution
// of netns-enter; root may install it without no_new_privs, which would
// disable setuid. Signals are ignored and blocked with raw system calls, so
// that the command starts with exactly that state (Go's own handlers are
// reset to the default by execve, as for any program).
func TestHelperExec(t *testing.T) {
	spec := os.Getenv(helperAsEnv)
	if spec == "" {
		return
	}
	runtime.LockOSThread()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(125)
	}
	var uid, gid int
	if _, err := fmt.Sscanf(spec, "%d:%d", &uid, &gid); err != nil {
		fail(err)
	}
	argv := os.Args[slices.Index(os.Args, "--")+1:]
	path, err := exec.LookPath(argv[0])
	if err != nil {
		fail(err)
	}
	signals := func(key string) []int {
		var sigs []int
		for _, f := range strings.FieldsFunc(os.Getenv(key), func(r rune) bool { return r == ',' }) {
			n, err := strconv.Atoi(f)
			if err != nil {
				fail(err)
			}
			sigs = append(sigs, n)
		}
		return sigs
	}
	if os.Getenv(helperDenyEnv) == "1" {
		const (
			ldAbsW = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
			jeqK   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
			retK   = unix.BPF_RET | unix.BPF_K
		)
		filter := []unix.SockFilter{
			{Code: ldAbsW, K: 0}, // seccomp_data.nr
			{Code: jeqK, Jt: 0, Jf: 1, K: unix.SYS_OPENAT2},
			{Code: retK, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
			{Code: retK, K: unix.SECCOMP_RET_ALLOW},
		}
		prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
		if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog))); e != 0 {
			fail(fmt.Errorf("seccomp: %w", e))
		}
	}
	if err := syscall.Setgroups(nil); err != nil {
		fail(err)
	}
	if err := syscall.Setresgid(gid, gid, gid); err != nil {
		fail(err)
	}
	if err := syscall.Setresuid(uid, uid, uid); err != nil {
		fail(err)
	}
	for _, sig := range signals(helperIgnoreEnv) {
		act := [4]uint64{1} // sa_handler SIG_IGN
		if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0); e != 0 {
			fail(fmt.Errorf("ignore signal %d: %w", sig, e))
		}
	}
	var set unix.Sigset_t
	for _, sig := range signals(helperBlockEnv) {
		set.Val[0] |= 1 << (sig - 1)
	}
	if err := unix.PthreadSigmask(unix.SIG_SETMASK, &set, nil); err != nil {
		fail(err)
	}
	fail(syscall.Exec(path, argv, os.Environ()))
}
