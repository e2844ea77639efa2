package nspawn

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// Machine is a booted systemd machine.
type Machine struct {
	// Name is the machine name (also its hostname and cgroup name).
	Name string
	// PID1 is the machine's init as seen from the host.
	PID1 int
	// BootTime is the time from starting systemd-nspawn until systemd
	// reported the system running.
	BootTime time.Duration

	dir     string
	lock    *os.File
	cgroups []string
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error

	mu   sync.Mutex
	uids map[string]userEntry
}

type userEntry struct {
	uid  int
	home string
}

// Boot starts a machine and waits until it has booted. It skips the test
// (fails with CI=true) when root, systemd-nspawn or nsenter are missing.
// The machine is stopped and every trace of it removed when the test ends.
func Boot(t testing.TB, opts Options) *Machine {
	t.Helper()
	testutil.RequireRoot(t)
	for _, c := range []string{"systemd-nspawn", "nsenter", "runuser", "mount"} {
		testutil.RequireCommand(t, c)
	}
	if _, err := os.Stat("/lib/systemd/systemd"); err != nil {
		testutil.Missing(t, "systemd is not installed (apt-get install systemd): %v", err)
	}
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Minute
	}
	RemoveLeftovers(t.Logf)

	m, err := prepare(opts)
	if err != nil {
		t.Fatalf("nspawn: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			m.dumpLogs(t)
		}
		if err := m.teardown(); err != nil {
			t.Errorf("nspawn: teardown %s: %v", m.Name, err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), opts.Timeout)
	defer cancel()
	if err := m.start(ctx, opts, t.Logf); err != nil {
		t.Fatalf("nspawn: boot %s: %v", m.Name, err)
	}
	t.Logf("nspawn: machine %s (pid1 %d) booted in %v", m.Name, m.PID1, m.BootTime.Round(time.Millisecond))
	return m
}

// prepare makes the machine's directory, seed tree and cgroups; on error
// it removes what it made.
func prepare(opts Options) (*Machine, error) {
	m, err := prepareSteps(opts)
	if err != nil && m != nil {
		remove(m.dir, m.cgroups)
		os.RemoveAll(filepath.Join(BaseDir, ".new-"+m.Name))
		if m.lock != nil {
			m.lock.Close()
		}
		return nil, err
	}
	return m, err
}

func prepareSteps(opts Options) (*Machine, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	m := &Machine{Name: NamePrefix + hex.EncodeToString(b[:]), done: make(chan struct{}), uids: map[string]userEntry{}}
	if err := os.MkdirAll(BaseDir, 0o700); err != nil {
		return m, err
	}
	// The directory is made under a temporary name and gets its final
	// name only once its lock is held: RemoveLeftovers of a concurrent
	// run treats an unlocked directory as a leftover. The lock is held
	// until teardown or the death of the test process (O_CLOEXEC keeps
	// it out of nspawn).
	m.dir = filepath.Join(BaseDir, m.Name)
	tmp := filepath.Join(BaseDir, ".new-"+m.Name)
	for _, d := range []string{tmp, filepath.Join(tmp, "up"), filepath.Join(tmp, "merged"), filepath.Join(tmp, "seed")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return m, err
		}
	}
	lock, err := os.OpenFile(filepath.Join(tmp, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return m, err
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return m, fmt.Errorf("lock: %w", err)
	}
	m.lock = lock
	if err := os.Rename(tmp, m.dir); err != nil {
		return m, err
	}

	hide, err := hideList(opts.Hide)
	if err != nil {
		return m, err
	}
	if err := os.WriteFile(filepath.Join(m.dir, "hide"), []byte(hide), 0o600); err != nil {
		return m, err
	}
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return m, err
	}
	files := append([]File{
		{Path: "/etc/machine-id", Data: hex.EncodeToString(id[:]) + "\n", Mode: 0o444},
		{Path: "/etc/hostname", Data: m.Name + "\n"},
		{Path: "/etc/systemd/system/" + Target, Data: targetUnit(opts.Wants)},
	}, opts.Files...)
	for _, f := range files {
		if !filepath.IsAbs(f.Path) {
			return m, fmt.Errorf("file %q: not an absolute path", f.Path)
		}
		p := filepath.Join(m.dir, "seed", f.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return m, err
		}
		mode := os.FileMode(f.Mode)
		if mode == 0 {
			mode = 0o644
		}
		if err := os.WriteFile(p, []byte(f.Data), mode); err != nil {
			return m, err
		}
		if err := os.Chmod(p, mode); err != nil {
			return m, err
		}
	}
	// cp -a copies the seed directories' modes too: make them ordinary.
	if err := filepath.WalkDir(filepath.Join(m.dir, "seed"), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			err = os.Chmod(p, 0o755)
		}
		return err
	}); err != nil {
		return m, err
	}

	hs, err := hierarchies()
	if err != nil {
		return m, err
	}
	for _, h := range hs {
		cg := filepath.Join(h, m.Name)
		if err := os.Mkdir(cg, 0o755); err != nil {
			return m, fmt.Errorf("cgroup: %w", err)
		}
		m.cgroups = append(m.cgroups, cg)
	}
	return m, nil
}

// start runs nspawn and waits for the boot to finish.
func (m *Machine) start(ctx context.Context, opts Options, logf func(string, ...any)) error {
	console, err := os.Create(filepath.Join(m.dir, "console.log"))
	if err != nil {
		return err
	}
	defer console.Close()
	args := []string{"-c", wrapperScript, "sh", m.dir}
	for _, cg := range m.cgroups {
		args = append(args, filepath.Join(cg, "cgroup.procs"))
	}
	args = append(args, "--")
	args = append(args, nspawnArgs(m.Name, filepath.Join(m.dir, "merged"), opts)...)
	m.cmd = exec.Command("/bin/sh", args...)
	m.cmd.Stdout, m.cmd.Stderr = console, console
	m.cmd.Env = machineEnv
	m.cmd.SysProcAttr = &syscall.SysProcAttr{
		// A private mount namespace (Go makes / private in it): the
		// overlay lives and dies with the nspawn process.
		Unshareflags: syscall.CLONE_NEWNS,
		// If the test process dies, nspawn shuts the machine down.
		Pdeathsig: syscall.SIGTERM,
	}
	begin := time.Now()
	if err := m.cmd.Start(); err != nil {
		close(m.done)
		return err
	}
	go func() {
		m.waitErr = m.cmd.Wait()
		close(m.done)
	}()

	for m.PID1 == 0 {
		select {
		case <-m.done:
			return fmt.Errorf("systemd-nspawn exited: %v: %s", m.waitErr, m.console())
		case <-ctx.Done():
			return fmt.Errorf("no init process in the machine: %w", ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
		m.PID1 = findInit(m.cmd.Process.Pid)
	}

	for {
		out, err := m.Run(ctx, "systemctl", "is-system-running", "--wait")
		state := strings.TrimSpace(out.Stdout)
		switch {
		case state == "running":
			m.BootTime = time.Since(begin)
			return m.setup(ctx)
		case state == "degraded":
			m.BootTime = time.Since(begin)
			failed, _ := m.Run(ctx, "systemctl", "--failed", "--no-legend", "--plain")
			logf("nspawn: %s is degraded; failed units:\n%s", m.Name, failed.Stdout)
			return m.setup(ctx)
		case err != nil && (state == "" || state == "offline") && ctx.Err() == nil:
			// systemd has not made /run/systemd/system or its bus yet.
		default:
			return fmt.Errorf("system state %q: %v", state, err)
		}
		select {
		case <-m.done:
			return fmt.Errorf("systemd-nspawn exited: %v: %s", m.waitErr, m.console())
		case <-ctx.Done():
			return fmt.Errorf("waiting for systemd: %w (last: %v)", ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// setup finishes the machine after boot.
func (m *Machine) setup(ctx context.Context) error {
	_, err := m.Run(ctx, "sh", "-c", procSysUser)
	return err
}

// findInit returns the child of nspawn that is PID 1 of its own pid
// namespace, or 0.
func findInit(nspawn int) int {
	for _, pid := range children(nspawn) {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(st), "\n") {
			if ns, ok := strings.CutPrefix(l, "NSpid:"); ok {
				ids := strings.Fields(ns)
				if len(ids) > 1 && ids[len(ids)-1] == "1" {
					return pid
				}
			}
		}
	}
	return 0
}

// children returns the pids of the children of pid: from each of its
// threads' /proc/PID/task/TID/children where the kernel has them
// (CONFIG_PROC_CHILDREN; a child is listed under the thread that forked
// it), else from every process's parent in /proc/*/stat.
func children(pid int) []int {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/[0-9]*/children", pid))
	if len(files) == 0 {
		return childrenFromStat(pid)
	}
	var pids []int
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			continue // the thread has exited
		}
		for _, f := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(f); err == nil {
				pids = append(pids, p)
			}
		}
	}
	return pids
}

func childrenFromStat(pid int) []int {
	var pids []int
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parens.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			if p, err := strconv.Atoi(filepath.Base(filepath.Dir(st))); err == nil {
				pids = append(pids, p)
			}
		}
	}
	return pids
}

// Command returns a command that runs args as root in the machine, in all
// of its namespaces, with a minimal environment.
func (m *Machine) Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"--target", strconv.Itoa(m.PID1), "--all", "--"}, args...)...)
	cmd.Env = machineEnv
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// Run runs args as root in the machine. A non-zero exit is an *ExitError
// that carries the output.
func (m *Machine) Run(ctx context.Context, args ...string) (Output, error) {
	return run(m.Command(ctx, args...), args)
}

// MustRun runs args as root in the machine and fails the test on error.
func (m *Machine) MustRun(t testing.TB, args ...string) string {
	t.Helper()
	out, err := m.Run(context.Background(), args...)
	if err != nil {
		t.Fatalf("in %s: %v", m.Name, err)
	}
	return out.Stdout
}

// CommandAs returns a command that runs args as user in the machine through
// runuser, with HOME, USER, LOGNAME and SHELL of the user and
// XDG_RUNTIME_DIR=/run/user/UID, so that `systemd-run --user` reaches the
// user's manager (see EnableLinger).
func (m *Machine) CommandAs(ctx context.Context, user string, args ...string) (*exec.Cmd, error) {
	u, err := m.lookup(ctx, user)
	if err != nil {
		return nil, err
	}
	a := append([]string{"runuser", "-u", user, "--", "env", "XDG_RUNTIME_DIR=/run/user/" + strconv.Itoa(u.uid)}, args...)
	cmd := m.Command(ctx, a...)
	cmd.Dir = "/"
	return cmd, nil
}

// RunAs runs args as user in the machine (see CommandAs).
func (m *Machine) RunAs(ctx context.Context, user string, args ...string) (Output, error) {
	cmd, err := m.CommandAs(ctx, user, args...)
	if err != nil {
		return Output{}, err
	}
	return run(cmd, args)
}

// EnableLinger makes logind start user's systemd manager now and keep it
// running without a login, and waits until the manager is up. It returns
// the user's uid.
func (m *Machine) EnableLinger(t testing.TB, user string) int {
	t.Helper()
	ctx := context.Background()
	u, err := m.lookup(ctx, user)
	if err != nil {
		t.Fatalf("in %s: %v", m.Name, err)
	}
	m.MustRun(t, "loginctl", "enable-linger", user)
	m.MustRun(t, "systemctl", "start", fmt.Sprintf("user@%d.service", u.uid))
	return u.uid
}

// lookup returns the machine's passwd entry of user.
func (m *Machine) lookup(ctx context.Context, user string) (userEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if u, ok := m.uids[user]; ok {
		return u, nil
	}
	out, err := m.Run(ctx, "getent", "passwd", user)
	if err != nil {
		return userEntry{}, fmt.Errorf("user %s: %w (users must exist on the host before Boot)", user, err)
	}
	f := strings.Split(strings.TrimSpace(out.Stdout), ":")
	if len(f) < 7 {
		return userEntry{}, fmt.Errorf("user %s: bad passwd entry %q", user, out.Stdout)
	}
	uid, err := strconv.Atoi(f[2])
	if err != nil {
		return userEntry{}, fmt.Errorf("user %s: uid %q: %w", user, f[2], err)
	}
	u := userEntry{uid: uid, home: f[5]}
	m.uids[user] = u
	return u, nil
}

// Path returns the host path of path in the machine's root (through
// /proc/PID1/root), for reading and writing files from the test.
func (m *Machine) Path(path string) string {
	return fmt.Sprintf("/proc/%d/root%s", m.PID1, filepath.Clean("/"+path))
}

// WriteFile writes a root-owned file into the running machine, creating
// its parent directories.
func (m *Machine) WriteFile(t testing.TB, path, data string, mode os.FileMode) {
	t.Helper()
	p := m.Path(path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func (m *Machine) console() string {
	b, _ := os.ReadFile(filepath.Join(m.dir, "console.log"))
	return string(b)
}

// dumpLogs logs what helps to debug a failed test: the console, the
// failed units and the end of the journal.
func (m *Machine) dumpLogs(t testing.TB) {
	t.Logf("nspawn: console of %s:\n%s", m.Name, m.console())
	if m.PID1 == 0 {
		return
	}
	select {
	case <-m.done:
		return
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, _ := m.Run(ctx, "systemctl", "--failed", "--no-legend", "--plain")
	t.Logf("nspawn: failed units in %s:\n%s", m.Name, out.Stdout)
	out, _ = m.Run(ctx, "journalctl", "-b", "--no-pager", "-q", "-n", "150")
	t.Logf("nspawn: journal of %s (last 150 lines):\n%s", m.Name, out.Stdout)
}

// teardown stops the machine (SIGTERM to nspawn is a clean poweroff),
// kills what is left, and removes its cgroups and directory.
func (m *Machine) teardown() error {
	if m.cmd != nil && m.cmd.Process != nil {
		select {
		case <-m.done:
		default:
			m.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-m.done:
			case <-time.After(30 * time.Second):
				killCgroups(m.cgroups)
				m.cmd.Process.Kill()
				<-m.done
			}
		}
	}
	err := remove(m.dir, m.cgroups)
	m.lock.Close()
	return err
}

// remove kills what is left in cgroups, removes them, and removes dir.
func remove(dir string, cgroups []string) error {
	var errs []error
	if err := killCgroups(cgroups); err != nil {
		errs = append(errs, err)
	}
	for _, cg := range cgroups {
		if err := rmdirTree(cg); err != nil {
			errs = append(errs, err)
		}
	}
	if dir != "" {
		if mounted, err := mountsUnder(dir); err != nil {
			errs = append(errs, err)
		} else if len(mounted) > 0 {
			// Only possible if a process outside the machine's mount
			// namespace mounted here; never delete through a mount.
			errs = append(errs, fmt.Errorf("still mounted, not removing %s: %s", dir, strings.Join(mounted, " ")))
		} else if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
		// nspawn leaves its mount propagation directory on a /run
		// that is not a tmpfs.
		os.Remove(filepath.Join("/run/systemd/nspawn/propagate", filepath.Base(dir)))
	}
	return errors.Join(errs...)
}

// hierarchies returns the cgroup hierarchies a machine's cgroup is made
// in: the unified one (cgroup v2), or name=systemd and unified (hybrid),
// or name=systemd alone (legacy).
func hierarchies() ([]string, error) {
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/cgroup", &st); err != nil {
		return nil, fmt.Errorf("statfs /sys/fs/cgroup: %w", err)
	}
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		return []string{"/sys/fs/cgroup"}, nil
	}
	var hs []string
	for _, h := range []struct {
		dir   string
		magic int64
	}{{"/sys/fs/cgroup/systemd", unix.CGROUP_SUPER_MAGIC}, {"/sys/fs/cgroup/unified", unix.CGROUP2_SUPER_MAGIC}} {
		if unix.Statfs(h.dir, &st) == nil && st.Type == h.magic {
			hs = append(hs, h.dir)
		}
	}
	if len(hs) == 0 {
		return nil, errors.New("no systemd or unified cgroup hierarchy under /sys/fs/cgroup")
	}
	return hs, nil
}

// killCgroups SIGKILLs every process in the cgroup trees until they are
// empty.
func killCgroups(cgroups []string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var pids []int
		for _, cg := range cgroups {
			filepath.WalkDir(cg, func(p string, d os.DirEntry, err error) error {
				if err != nil || !d.IsDir() {
					return nil
				}
				b, _ := os.ReadFile(filepath.Join(p, "cgroup.procs"))
				for _, f := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(f); err == nil {
						pids = append(pids, pid)
					}
				}
				return nil
			})
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes left in %s: %v", strings.Join(cgroups, " "), pids)
		}
		for _, pid := range pids {
			if pid != os.Getpid() {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// rmdirTree removes an empty cgroup and its descendants, deepest first,
// retrying while the kernel finishes releasing them.
func rmdirTree(cg string) error {
	var dirs []string
	filepath.WalkDir(cg, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	var err error
	for i := len(dirs) - 1; i >= 0; i-- {
		for try := 0; try < 100; try++ {
			if err = syscall.Rmdir(dirs[i]); err == nil || errors.Is(err, syscall.ENOENT) {
				err = nil
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			return fmt.Errorf("rmdir %s: %w", dirs[i], err)
		}
	}
	return nil
}

// mountsUnder lists the mount points at or under dir in this process's
// mount namespace.
func mountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fs := strings.Fields(s.Text())
		if len(fs) > 4 && (fs[4] == dir || strings.HasPrefix(fs[4], dir+"/")) {
			out = append(out, fs[4])
		}
	}
	return out, s.Err()
}

// RemoveLeftovers removes what killed runs left behind: machines whose
// lock is no longer held (their processes are killed through their
// cgroups), and cgroups without a machine directory. Boot calls it first.
func RemoveLeftovers(logf func(string, ...any)) {
	hs, _ := hierarchies()
	entries, _ := os.ReadDir(BaseDir)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), NamePrefix) {
			continue
		}
		dir := filepath.Join(BaseDir, e.Name())
		lock, err := os.Open(filepath.Join(dir, "lock"))
		if err == nil {
			err = unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB)
			if errors.Is(err, unix.EWOULDBLOCK) {
				lock.Close()
				continue // a live test owns it
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			continue
		}
		var cgs []string
		for _, h := range hs {
			cgs = append(cgs, filepath.Join(h, e.Name()))
		}
		if err := remove(dir, cgs); err != nil {
			logf("nspawn: leftover %s: %v", e.Name(), err)
		} else {
			logf("nspawn: removed leftover machine %s", e.Name())
		}
		if lock != nil {
			lock.Close()
		}
	}
	for _, h := range hs {
		cgs, _ := filepath.Glob(filepath.Join(h, NamePrefix+"*"))
		for _, cg := range cgs {
			if _, err := os.Stat(filepath.Join(BaseDir, filepath.Base(cg))); errors.Is(err, os.ErrNotExist) {
				if err := remove("", []string{cg}); err != nil {
					logf("nspawn: leftover cgroup %s: %v", cg, err)
				}
			}
		}
	}
}

// procSysUser makes /proc/sys/user writable in the machine (nspawn mounts
// /proc/sys read-only): bwrap --disable-userns writes max_user_namespaces
// inside the sandbox's own user namespace, which fails with EROFS there
// although it changes nothing outside. The rest of /proc/sys stays
// read-only, so the machine cannot change the host's kernel settings.
const procSysUser = "mount --bind /proc/sys/user /proc/sys/user && mount -o remount,bind,rw /proc/sys/user"

// wrapperScript runs in the private mount namespace of the future nspawn
// process: it joins the machine's cgroups, mounts the overlay, removes the
// hidden paths in it (whiteouts in the upper layer: the host's files stay),
// copies the seed tree in and execs nspawn. Positional parameters: $1 the machine's
// directory, then the cgroup.procs files, "--", the nspawn command.
const wrapperScript = `set -eu
d=$1; shift
while [ "$1" != -- ]; do echo $$ >"$1"; shift; done; shift
mount -t tmpfs -o mode=0755 claude-sbx-upper "$d/up"
mkdir "$d/up/upper" "$d/up/work"
mount -t overlay -o "lowerdir=/,upperdir=$d/up/upper,workdir=$d/up/work" claude-sbx-root "$d/merged"
while IFS= read -r p; do rm -rf -- "$d/merged$p"; done <"$d/hide"
cp -a "$d/seed/." "$d/merged/"
exec "$@"
`

// run runs cmd and returns its output; a failure carries the output.
func run(cmd *exec.Cmd, shown []string) (Output, error) {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := Output{Stdout: stdout.String(), Stderr: stderr.String()}
	if err != nil {
		return out, &ExitError{Args: shown, Err: err, Output: out}
	}
	return out, nil
}

// machineEnv is the environment of commands run in the machine.
var machineEnv = []string{
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"LANG=C.UTF-8",
	"HOME=/root",
	"SYSTEMD_PAGER=",
	"SYSTEMD_COLORS=0",
}
