package claude

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/buildinfo"
	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/sandbox"
	"github.com/claude-sandbox/claude-sandbox/internal/sandboxcfg"
	"github.com/claude-sandbox/claude-sandbox/internal/seccomp"
)

// configName is how messages name the config file.
const configName = "~/.claude-sandbox-init"

func launch(ctx context.Context, o options, stdio multicall.Stdio) error {
	// Fds the launcher inherited without O_CLOEXEC would pass through
	// exec and through bwrap (which hands on every fd it does not use).
	markInheritedCloexec()
	// Catching signals takes a handshake with the runtime's signal thread
	// per signal (about 2 ms on a slow VM): start it now, so that it runs
	// beside the work below, and have it done before the chain starts.
	sigs := catchSignals()
	defer sigs.stop()

	uid := os.Getuid()
	home, userName, err := identity(uid)
	if err != nil {
		return err
	}
	k, err := readKnobs(os.Getenv, home, uid)
	if err != nil {
		return err
	}
	// The physical working directory (getcwd(2)), not $PWD: a symlink
	// the agent planted inside a project must not steer `pwd-under`.
	pwd, _ := syscall.Getwd()

	var directives []sandboxcfg.Directive
	cfg, src, err := loadConfig(filepath.Join(home, ".claude-sandbox-init"), uid)
	if err == nil {
		defer cfg.Close()
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return &multicall.ExitError{Code: multicall.ExitUsage, Err: err}
	default:
		directives, err = sandboxcfg.Parse(src, sandboxcfg.Options{
			Name:         configName,
			Vars:         sandboxcfg.Vars{Home: home, Pwd: pwd, User: userName},
			KnownSyscall: seccomp.Known,
		})
		if err != nil {
			return &multicall.ExitError{Code: multicall.ExitUsage, Err: err}
		}
	}

	self, _ := os.Executable()
	spec := sandbox.Spec{
		UID: uid, User: userName, Home: home, Pwd: pwd,
		SandboxHome: k.sandboxHome, Tmp: k.tmp, BinDir: k.binDir,
		Netns: k.netns, NetnsEnter: filepath.Join(buildinfo.Prefix, "bin", "netns-enter"),
		Network:  networkFacts(o.hostNetwork),
		Launcher: self, Environ: os.Environ(), Shell: o.shell, Args: o.args,
		Config: directives, ConfigName: configName,
	}
	if o.mode == modeSeccompTable || o.mode == modeSeccompBPF {
		spec.Shell = true // the policy does not depend on the agent
	}
	l, err := sandbox.Build(osHost{}, spec)
	if err != nil {
		var ce *sandboxcfg.Error
		if errors.As(err, &ce) {
			return &multicall.ExitError{Code: multicall.ExitUsage, Err: err}
		}
		return err
	}
	if o.mode == modeSeccompTable {
		return seccomp.WriteTable(stdio.Out, l.Seccomp)
	}
	// Fail closed: no filter, no sandbox.
	filter, err := seccomp.Build(l.Seccomp)
	if err != nil {
		return fmt.Errorf("seccomp filter: %w: refusing to start without it", err)
	}
	if o.mode == modeSeccompBPF {
		_, err := stdio.Out.Write(filter.Bytes())
		return err
	}

	bwrapPath, err := bwrap.Find(os.Getenv("PATH"))
	if err != nil {
		return err
	}
	if o.mode == modeDryRun {
		return l.WriteDryRun(stdio.Out, bwrapPath, filter.Len())
	}
	if err := bwrap.Check(bwrapPath, cacheDir(home)); err != nil {
		return err
	}
	if err := bwrap.CheckAppArmor(ctx, bwrapPath, l.Plan, readFile); err != nil {
		return err
	}
	// The agent's own repository (git commit) is a bind source: it must
	// exist before the binds are opened.
	if l.AgentGit != "" {
		if err := checkHostGit(); err != nil {
			return err
		}
		if err := ensureAgentGit(l.AgentGit, uid); err != nil {
			return err
		}
	}
	// Every bind from an fd checked on the host, bwrap's first after the
	// args and the seccomp program. The sandbox home and the private tmp
	// are made here when missing.
	b := binder{home: home, writable: l.Writable, rules: dirRules(k, uid)}
	bound, err := b.bindFromFDs(&l.Plan, sandbox.SeccompFD+1)
	if err != nil {
		var be *bindError
		if errors.As(err, &be) && be.origin != "" {
			return &multicall.ExitError{Code: multicall.ExitUsage, Err: err}
		}
		return err
	}
	defer bound.Close()
	if err := trustConfig(cfg, bound); err != nil {
		return &multicall.ExitError{Code: multicall.ExitUsage, Err: err}
	}
	for _, n := range l.Notices {
		fmt.Fprintf(stdio.Err, "claude: %s\n", n)
	}

	args, err := bwrap.Encode(l.Plan.Args())
	if err != nil {
		return err
	}
	argsFile, err := sealedMemfd("bwrap-args", args)
	if err != nil {
		return err
	}
	defer argsFile.Close()
	filterFile, err := sealedMemfd("seccomp", filter.Bytes())
	if err != nil {
		return err
	}
	defer filterFile.Close()
	// extra become fds 3 and 4 in the child, in this order.
	extra := []*os.File{sandbox.ArgsFD - 3: argsFile, sandbox.SeccompFD - 3: filterFile}
	extra = append(extra, bound.files...)
	return runChain(l.Argv(bwrapPath), l.Env, extra, stdio, sigs)
}

// identity returns the user's home ($HOME, else the passwd entry) and name
// ($USER, else the passwd entry).
func identity(uid int) (home, name string, err error) {
	home, name = os.Getenv("HOME"), os.Getenv("USER")
	if filepath.IsAbs(home) && name != "" {
		return filepath.Clean(home), name, nil
	}
	u, lerr := user.LookupId(strconv.Itoa(uid))
	if !filepath.IsAbs(home) {
		if lerr != nil || !filepath.IsAbs(u.HomeDir) {
			return "", "", fmt.Errorf("cannot find your home directory: set HOME")
		}
		home = u.HomeDir
	}
	if name == "" && lerr == nil {
		name = u.Username
	}
	return filepath.Clean(home), name, nil
}

func cacheDir(home string) string {
	if d := os.Getenv("XDG_CACHE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "claude-sandbox")
	}
	return filepath.Join(home, ".cache", "claude-sandbox")
}

// markInheritedCloexec sets FD_CLOEXEC on every fd above 2.
func markInheritedCloexec() {
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return
	}
	// Kernels before 5.11.
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		if fd, err := strconv.Atoi(n); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
}

// sealedMemfd returns a sealed in-memory file holding data, positioned at
// its start, with O_CLOEXEC (exec.Cmd.ExtraFiles clears it on the copy).
func sealedMemfd(name string, data []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, os.NewSyscallError("memfd_create", err)
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, fmt.Errorf("write %s: %w", name, err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SEAL|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE); err != nil {
		f.Close()
		return nil, os.NewSyscallError("fcntl F_ADD_SEALS", err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// runChain runs argv in a process group of its own (see
// jobcontrol_linux.go) and waits for it, passing on its exit status and
// the signals sigs catches.
//
// Preconditions: none; it locks the calling goroutine to its OS thread
// until the child is reaped, because the child's parent-death signal
// (PR_SET_PDEATHSIG, SIGKILL) fires when the thread that forked it exits,
// not the process. Killing the launcher, even with SIGKILL, thus kills the
// head of the chain; the kernel clears the death signal across the setuid
// exec of netns-enter, and bwrap --die-with-parent sets it again for bwrap
// and for the sandbox.
//
// It uses syscall.ForkExec rather than os/exec, whose first Start probes
// pidfd support by cloning a throwaway child: a process more on every
// launch.
func runChain(argv, env []string, extra []*os.File, stdio multicall.Stdio, sigs *catcher) error {
	files := []uintptr{fdOf(stdio.In, 0), fdOf(stdio.Out, 1), fdOf(stdio.Err, 2)}
	for _, f := range extra {
		files = append(files, f.Fd())
	}
	tty := saveTerminal()
	caught := sigs.wait()
	// A signal caught before the chain exists ends the launcher as it
	// would have without catching: nothing is started.
	for pending := true; pending; {
		select {
		case s := <-caught:
			if fatal(s) {
				return multicall.Exit(128 + int(s.(syscall.Signal)))
			}
		default:
			pending = false
		}
	}
	if err := becomeSubreaper(); err != nil {
		return err
	}

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// The child joins its new group and, when the launcher is in the
	// terminal's foreground, takes the terminal, before it execs.
	fg := tty.foreground()
	pid, err := syscall.ForkExec(argv[0], argv, &syscall.ProcAttr{
		Env:   env,
		Files: files,
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true, Foreground: fg, Ctty: tty.fd},
	})
	if err != nil {
		return fmt.Errorf("start %s: %w", argv[0], err)
	}
	// From here on the launcher can be in the background of its own
	// terminal; taking the terminal back must not stop it. (Ignored
	// before the fork, SIGTTOU would stay ignored in the chain.)
	signal.Ignore(syscall.SIGTTOU)
	tty.lent = fg
	j := &job{pid: pid, tty: tty}
	done := make(chan struct{})
	go forward(caught, done, j)
	ws, err := j.wait()
	reapOrphans()
	close(done)
	tty.restore()
	if err != nil {
		return fmt.Errorf("wait %s: %w", argv[0], err)
	}
	code := ws.ExitStatus()
	if ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	if code != 0 {
		return multicall.Exit(code)
	}
	return nil
}

// catcher catches the signals the launcher passes on to the chain.
type catcher struct {
	c     chan os.Signal
	ready chan struct{}
}

// catchSignals starts catching SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGUSR1
// and SIGUSR2, and SIGCONT and SIGWINCH for job control, in the background;
// until that is done they act as usual.
func catchSignals() *catcher {
	k := &catcher{c: make(chan os.Signal, 8), ready: make(chan struct{})}
	go func() {
		signal.Notify(k.c, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2,
			syscall.SIGCONT, syscall.SIGWINCH)
		close(k.ready)
	}()
	return k
}

// wait returns the channel of caught signals once catching has begun.
func (k *catcher) wait() <-chan os.Signal {
	<-k.ready
	return k.c
}

// stop ends catching.
func (k *catcher) stop() {
	<-k.ready
	signal.Stop(k.c)
}

// fdOf returns the descriptor of r when it is an *os.File, else def.
func fdOf(r any, def uintptr) uintptr {
	if f, ok := r.(*os.File); ok {
		return f.Fd()
	}
	return def
}
