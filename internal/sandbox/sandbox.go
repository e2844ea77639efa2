// Package sandbox decides how the agent is started: the chain
// (systemd-run, netns-enter, bwrap), the bwrap plan built from the defaults
// and the user's ~/.claude-sandbox-init, the environment and the command.
//
// Build only looks at the host through a Host, so the whole decision is
// tested with a fake one; carrying it out is the claude applet's job.
package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
	"github.com/claude-sandbox/claude-sandbox/internal/nsname"
	"github.com/claude-sandbox/claude-sandbox/internal/sandboxcfg"
	"github.com/claude-sandbox/claude-sandbox/internal/seccomp"
)

// The fds bwrap reads its options and its seccomp program from.
const (
	ArgsFD    = 3
	SeccompFD = 4
)

// Host is what Build may ask about the machine.
type Host interface {
	Stat(path string) (fs.FileInfo, error)
	Lstat(path string) (fs.FileInfo, error)
	Readlink(path string) (string, error)
	Glob(pattern string) ([]string, error)
	// ReadDir lists a directory, with each entry's type as the
	// directory itself tells it (no stat of each entry).
	ReadDir(path string) ([]fs.DirEntry, error)
	EvalSymlinks(path string) (string, error)
	// ReadFile reads a regular file (git's index, .git files) of at most
	// MaxReadFile bytes, not following a symlink in its last component.
	ReadFile(path string) ([]byte, error)
	// Reachable reports whether a unix stream socket accepts connections.
	Reachable(socket string) bool
}

// Spec is what the launcher knows before deciding.
type Spec struct {
	UID  int
	User string
	// Home is the real home directory; the sandbox home is bound there.
	Home string
	// Pwd is the physical working directory ("" if unknown).
	Pwd string
	// SandboxHome and Tmp are the host directories bound at Home and /tmp.
	SandboxHome string
	Tmp         string
	// BinDir holds the agent binary `claude`.
	BinDir string
	// Netns is the network namespace to enter if it is active.
	Netns string
	// NetnsEnter is the path of the netns-enter helper.
	NetnsEnter string
	// Launcher is the launcher's own executable ("" if unknown): the
	// user runs it again at the next start.
	Launcher string
	// Network is what the launcher read of the namespaces (network.go).
	Network NetworkFacts
	// Environ is the launcher's environment.
	Environ []string
	// Shell runs a login shell instead of the agent.
	Shell bool
	// Args are the user's arguments for the agent or the shell.
	Args []string
	// Config is the parsed ~/.claude-sandbox-init; ConfigName names it in
	// messages.
	Config     []sandboxcfg.Directive
	ConfigName string
}

// Launch is the decision: what to run, how.
type Launch struct {
	// SystemdRun and NetnsEnter are the prefixes of the chain, nil when
	// not used.
	SystemdRun []string
	NetnsEnter []string
	Plan       bwrap.Plan
	// Command runs inside the sandbox.
	Command []string
	// Env is the environment of the chain (and so of the command, with
	// the plan's setenv/unsetenv applied by bwrap).
	Env []string
	// Seccomp are the config's changes to the filter.
	Seccomp seccomp.Options
	// Notices are printed on stderr before starting.
	Notices []string
	// AgentGit is the host directory of the agent's own git repository
	// (git commit in the config), to be made before the start; "" if none.
	AgentGit string
	// agentGitProject is the project whose .git it stands in for.
	agentGitProject string
	// Notes explain decisions in the dry run.
	Notes []string
	// Skipped lists optional paths that do not exist here.
	Skipped []string
	// EnvRemoved and EnvSet describe the environment changes.
	EnvRemoved []string
	EnvSet     []string
	// Writable are the host paths the sandbox can write besides the
	// plan's writable binds: the config's rw and dev binds whose condition
	// does not hold now (the agent may have written there before).
	Writable []string
}

// InsideRuntimeDir is $XDG_RUNTIME_DIR inside the sandbox: an empty
// directory.
func InsideRuntimeDir(uid int) string { return "/run/user/" + strconv.Itoa(uid) }

// Paths the default plan binds read-only where they exist.
var (
	usrDirs  = []string{"/usr/bin", "/usr/lib", "/usr/lib64", "/usr/libexec", "/usr/share", "/usr/include", "/usr/sbin", "/usr/src"}
	rootDirs = []string{"/bin", "/sbin", "/lib", "/lib64"}
	etcPaths = []string{"/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/resolv.conf", "/etc/gai.conf", "/etc/host.conf", "/etc/hosts", "/etc/ld.so.*", "/etc/localtime", "/etc/os-release", "/etc/machine-id", "/etc/ca-certificates", "/etc/pki", "/etc/ssl", "/etc/alternatives"}
	// pathDirs make up PATH inside, where visible.
	pathDirs = []string{"/usr/bin", "/bin", "/usr/sbin", "/sbin"}
)

// ConfigError is a problem with a line of the config file that only shows
// when the plan is built (a missing path, an invisible command).
type ConfigError = sandboxcfg.Error

// Build decides the launch.
func Build(h Host, s Spec) (*Launch, error) {
	l := &Launch{}
	p := &l.Plan
	*p = Namespaces()
	p.SeccompFD = SeccompFD

	env := newEnv(s.Environ)

	// The chain.
	runtimeDir, _ := env.get("XDG_RUNTIME_DIR")
	systemd := false
	if filepath.IsAbs(runtimeDir) {
		sock := UserManagerSocket(runtimeDir)
		sr := firstExisting(h, "/usr/bin/systemd-run", "/bin/systemd-run")
		switch {
		case sr == "":
			l.Notes = append(l.Notes, "systemd: not used: systemd-run is not installed")
		case !h.Reachable(sock):
			l.Notes = append(l.Notes, "systemd: not used: no user manager answers at "+sock)
		default:
			systemd = true
			l.SystemdRun = []string{sr, "--user", "--scope", "--slice=agent", "--quiet", "--"}
			l.Notes = append(l.Notes, "systemd: the sandbox runs in a scope of agent.slice")
		}
	} else {
		l.Notes = append(l.Notes, "systemd: not used: XDG_RUNTIME_DIR is not set")
	}
	netnsActive, netns, err := l.network(h, s)
	if err != nil {
		return nil, err
	}

	// System directories, read-only.
	for _, d := range usrDirs {
		l.roBind(h, d)
	}
	for _, d := range rootDirs {
		fi, err := h.Lstat(d)
		switch {
		case err != nil:
			l.Skipped = append(l.Skipped, d)
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := h.Readlink(d)
			if err != nil {
				l.Skipped = append(l.Skipped, d)
				continue
			}
			p.Ops = append(p.Ops, bwrap.Op{Kind: bwrap.Symlink, Src: target, Dest: d})
		default:
			p.Ops = append(p.Ops, bwrap.Op{Kind: bwrap.ROBindTry, Src: d, Dest: d})
		}
	}
	for _, e := range etcPaths {
		if strings.ContainsAny(e, "*?[") {
			m, _ := h.Glob(e)
			if len(m) == 0 {
				l.Skipped = append(l.Skipped, e)
			}
			for _, f := range m {
				l.roBind(h, f)
			}
			continue
		}
		l.roBind(h, e)
	}

	// The private /tmp comes before the binds of the agent and the home,
	// which may lie below /tmp and must not be hidden by it.
	p.Ops = append(p.Ops, bwrap.Op{Kind: bwrap.Bind, Src: s.Tmp, Dest: "/tmp"})

	// The agent.
	agent := filepath.Join(s.BinDir, "claude")
	if _, err := h.Stat(s.BinDir); err == nil {
		p.Ops = append(p.Ops, bwrap.Op{Kind: bwrap.ROBind, Src: s.BinDir, Dest: s.BinDir})
	} else if !s.Shell {
		return nil, fmt.Errorf("%s not found: run claude-update", agent)
	} else {
		l.Skipped = append(l.Skipped, s.BinDir)
	}

	// Kernel file systems and scratch space.
	p.Ops = append(p.Ops,
		bwrap.Op{Kind: bwrap.Proc, Dest: "/proc"},
		bwrap.Op{Kind: bwrap.Dev, Dest: "/dev"},
		bwrap.Op{Kind: bwrap.Tmpfs, Dest: "/dev/shm"},
		bwrap.Op{Kind: bwrap.Mqueue, Dest: "/dev/mqueue"},
		bwrap.Op{Kind: bwrap.Tmpfs, Dest: "/var/tmp"},
		bwrap.Op{Kind: bwrap.Tmpfs, Dest: "/run/lock"},
		bwrap.Op{Kind: bwrap.Symlink, Src: "../run", Dest: "/var/run"},
		bwrap.Op{Kind: bwrap.Symlink, Src: "../run/lock", Dest: "/var/lock"},
	)
	l.roBind(h, "/run/systemd/resolve")

	// Home and the runtime directory.
	inRuntime := InsideRuntimeDir(s.UID)
	p.Ops = append(p.Ops,
		bwrap.Op{Kind: bwrap.Bind, Src: s.SandboxHome, Dest: s.Home},
		bwrap.Op{Kind: bwrap.Dir, Dest: inRuntime, Perms: 0o700},
	)
	if netnsActive {
		rc := nsname.ResolvConf(netns)
		if _, err := h.Stat(rc); err == nil {
			p.Ops = append(p.Ops, bwrap.Op{Kind: bwrap.ROBind, Src: rc, Dest: "/etc/resolv.conf"})
		} else {
			l.Skipped = append(l.Skipped, rc)
		}
	}
	p.Ops = append(p.Ops, bwrap.Op{Kind: bwrap.Setenv, Src: "XDG_RUNTIME_DIR", Dest: inRuntime})
	p.Chdir = s.Home

	// The environment: scrub, then set ours.
	l.EnvRemoved = env.scrub(systemd)
	path := []string{}
	if _, err := h.Stat(s.BinDir); err == nil {
		path = append(path, s.BinDir)
	}
	for _, d := range pathDirs {
		if l.Visible(h, d) {
			path = append(path, d)
		}
	}
	env.set("PATH", strings.Join(path, ":"))
	env.set("XDG_DATA_DIRS", "/usr/share")
	env.set("DISABLE_UPDATES", "1")
	env.set("DISABLE_AUTOUPDATER", "1")
	env.set("DISABLE_INSTALLATION_CHECKS", "1")
	l.EnvSet = []string{"PATH=" + env.vals["PATH"], "XDG_DATA_DIRS=/usr/share", "DISABLE_UPDATES=1", "DISABLE_AUTOUPDATER=1", "DISABLE_INSTALLATION_CHECKS=1", "XDG_RUNTIME_DIR=" + inRuntime}

	// The chain runs on the host: its environment is the launcher's,
	// scrubbed, without the variables that steer the dynamic loader and
	// libc, and in the C locale (bwrap takes --setenv into its own
	// environment while it parses, and a translated error message would
	// load gconv modules from $GCONV_PATH). Those variables reach the
	// sandbox through bwrap --setenv; so does everything the config sets.
	chain := env.clone()
	for _, k := range env.order {
		if LoaderVar(k) {
			chain.unset(k)
			p.Ops = append(p.Ops, bwrap.Op{Kind: bwrap.Setenv, Src: k, Dest: env.vals[k]})
		}
	}
	if v, ok := env.get("LC_ALL"); ok {
		p.Ops = append(p.Ops, bwrap.Op{Kind: bwrap.Setenv, Src: "LC_ALL", Dest: v})
	} else {
		p.Ops = append(p.Ops, bwrap.Op{Kind: bwrap.Unsetenv, Dest: "LC_ALL"})
	}
	chain.set("LC_ALL", "C")

	// The project of the working directory (project.go).
	proj, err := l.addProject(h, s)
	if err != nil {
		return nil, err
	}

	// The user's config, in order.
	var command []string
	writable, err := writableMounts(s)
	if err != nil {
		return nil, err
	}
	if proj.RW {
		writable = append(writable, mount{proj.Dir, proj.Dir})
	}
	for _, m := range writable {
		l.Writable = append(l.Writable, m.host)
	}
	for _, d := range s.Config {
		ok, err := l.holds(h, s, d.When)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if err := checkPlanted(h, d, writable); err != nil {
			return nil, &sandboxcfg.Error{Name: s.ConfigName, Line: d.Line, Msg: err.Error()}
		}
		if err := l.apply(h, s, d, env, chain, &command); err != nil {
			return nil, &sandboxcfg.Error{Name: s.ConfigName, Line: d.Line, Msg: err.Error()}
		}
	}

	if err := l.finishProject(h, s, proj); err != nil {
		return nil, err
	}

	// The command. A $SHELL that is not visible inside (e.g. from
	// /usr/local) would break the agent's shell tool too.
	sh, _ := env.get("SHELL")
	if !filepath.IsAbs(sh) || !l.Visible(h, sh) {
		sh = "/bin/sh"
		env.set("SHELL", sh)
		chain.set("SHELL", sh)
		p.Ops = append(p.Ops, bwrap.Op{Kind: bwrap.Setenv, Src: "SHELL", Dest: sh})
		l.EnvSet = append(l.EnvSet, "SHELL="+sh)
	}
	if s.Shell {
		l.Command = append([]string{sh, "-l"}, s.Args...)
	} else {
		if command == nil {
			if _, err := h.Stat(agent); err != nil {
				return nil, fmt.Errorf("%s not found: run claude-update", agent)
			}
			command = []string{agent}
		}
		l.Command = append(command, s.Args...)
	}
	l.wrapAgentGit()
	l.Env = chain.list()
	return l, nil
}

// roBind binds path read-only if it exists, else records it as skipped.
func (l *Launch) roBind(h Host, path string) {
	if _, err := h.Stat(path); err != nil {
		l.Skipped = append(l.Skipped, path)
		return
	}
	l.Plan.Ops = append(l.Plan.Ops, bwrap.Op{Kind: bwrap.ROBindTry, Src: path, Dest: path})
}

func (l *Launch) holds(h Host, s Spec, conds []sandboxcfg.Cond) (bool, error) {
	for _, c := range conds {
		var ok bool
		switch c.Name {
		case sandboxcfg.PwdUnder:
			ok = under(s.Pwd, c.Path)
			if !ok {
				if real, err := h.EvalSymlinks(c.Path); err == nil {
					ok = under(s.Pwd, real)
				}
			}
		case sandboxcfg.Exists:
			// The agent must not decide which lines apply.
			if w := l.agentDecides(h, s, c.Path); w != "" {
				return false, &sandboxcfg.Error{Name: s.ConfigName, Line: c.Line, Msg: fmt.Sprintf(
					"exists: %s lies in %s, which the sandbox can write: the agent could decide this condition: test a path outside it", c.Path, w)}
			}
			_, err := h.Stat(c.Path)
			ok = err == nil
		default:
			return false, &sandboxcfg.Error{Name: s.ConfigName, Line: c.Line, Msg: fmt.Sprintf("unknown condition %q", c.Name)}
		}
		if ok == c.Not {
			return false, nil
		}
	}
	return true, nil
}

// under reports whether path is strictly below dir.
func under(path, dir string) bool {
	if path == "" || dir == "" {
		return false
	}
	if dir == "/" {
		return path != "/" && strings.HasPrefix(path, "/")
	}
	return strings.HasPrefix(path, dir+"/")
}

func (l *Launch) apply(h Host, s Spec, d sandboxcfg.Directive, env, chain *environ, command *[]string) error {
	p := &l.Plan
	a := d.Args
	switch d.Name {
	case sandboxcfg.RO, sandboxcfg.ROTry, sandboxcfg.RW, sandboxcfg.RWTry, sandboxcfg.Dev, sandboxcfg.DevTry:
		src, dest := a[0], a[0]
		if len(a) == 2 {
			dest = a[1]
		}
		try := strings.HasSuffix(d.Name, "-try")
		if _, err := h.Stat(src); err != nil {
			if try && errors.Is(err, fs.ErrNotExist) {
				l.Skipped = append(l.Skipped, src)
				return nil
			}
			if errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%s: %s does not exist (use %s-try to skip a missing path)", d.Name, src, strings.TrimSuffix(d.Name, "-try"))
			}
			return fmt.Errorf("%s: %v", d.Name, err)
		}
		kind := map[string]bwrap.Kind{
			sandboxcfg.RO: bwrap.ROBind, sandboxcfg.ROTry: bwrap.ROBindTry,
			sandboxcfg.RW: bwrap.Bind, sandboxcfg.RWTry: bwrap.BindTry,
			sandboxcfg.Dev: bwrap.DevBind, sandboxcfg.DevTry: bwrap.DevBindTry,
		}[d.Name]
		p.Ops = append(p.Ops, bwrap.Op{Kind: kind, Src: src, Dest: dest, Origin: origin(s, d)})
	case sandboxcfg.Tmpfs:
		p.Ops = append(p.Ops, bwrap.Op{Kind: bwrap.Tmpfs, Dest: a[0]})
	case sandboxcfg.Dir:
		p.Ops = append(p.Ops, bwrap.Op{Kind: bwrap.Dir, Dest: a[0]})
	case sandboxcfg.Symlink:
		p.Ops = append(p.Ops, bwrap.Op{Kind: bwrap.Symlink, Src: a[0], Dest: a[1]})
	case sandboxcfg.Setenv:
		// Inside only: bwrap sets it for the command.
		env.set(a[0], a[1])
		p.Ops = append(p.Ops, bwrap.Op{Kind: bwrap.Setenv, Src: a[0], Dest: a[1]})
		l.EnvSet = append(l.EnvSet, a[0]+"="+a[1])
	case sandboxcfg.Unsetenv:
		// Removed from the chain too: bwrap is pid 1 inside, and the
		// sandbox can read what bwrap was started with in
		// /proc/1/environ.
		for _, n := range a {
			p.Ops = append(p.Ops, bwrap.Op{Kind: bwrap.Unsetenv, Dest: n})
			if !chainOnly[n] {
				chain.unset(n)
			}
			if env.unset(n) {
				l.EnvRemoved = append(l.EnvRemoved, n)
			}
		}
	case sandboxcfg.Chdir:
		if !l.Visible(h, a[0]) {
			return fmt.Errorf("chdir: %s is not visible in the sandbox", a[0])
		}
		p.Chdir = a[0]
	case sandboxcfg.Command:
		if !l.Visible(h, a[0]) {
			return fmt.Errorf("command: %s is not visible in the sandbox", a[0])
		}
		*command = append([]string(nil), a...)
	case sandboxcfg.Bwrap:
		ops, err := rawOps(a)
		if err != nil {
			return err
		}
		for _, o := range ops {
			if o.IsBind() {
				o.Origin = origin(s, d)
			}
			p.Ops = append(p.Ops, o)
		}
	case sandboxcfg.SeccompAllow:
		l.Seccomp.Allow = append(l.Seccomp.Allow, a...)
	case sandboxcfg.SeccompDeny:
		l.Seccomp.Deny = append(l.Seccomp.Deny, a...)
	case sandboxcfg.Project, sandboxcfg.Git:
		// Decided before the config's mounts (project.go, agentgit.go).
	case sandboxcfg.Network:
		// Decided before the plan (network.go).
	default:
		return fmt.Errorf("unknown directive %q", d.Name)
	}
	return nil
}

// Visible reports whether path exists inside the sandbox as planned so far,
// judged from the ops (the last one covering path decides) and the host.
func (l *Launch) Visible(h Host, path string) bool {
	return l.visible(h, filepath.Clean(path), 0)
}

func (l *Launch) visible(h Host, path string, depth int) bool {
	if depth > 8 {
		return false
	}
	ops := l.Plan.Ops
	for i := len(ops) - 1; i >= 0; i-- {
		o := ops[i]
		if o.Kind == bwrap.Raw || o.Kind == bwrap.Setenv || o.Kind == bwrap.Unsetenv {
			continue
		}
		rel, ok := relTo(path, o.Dest)
		if !ok {
			continue
		}
		switch {
		case o.IsBind():
			_, err := h.Stat(filepath.Join(o.Src, rel))
			return err == nil
		case o.Kind == bwrap.Symlink:
			target := o.Src
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(o.Dest), target)
			}
			return l.visible(h, filepath.Join(target, rel), depth+1)
		default:
			// tmpfs, dir, proc, dev, mqueue: empty but for what the
			// kernel puts there.
			return rel == "." || o.Kind == bwrap.Proc || o.Kind == bwrap.Dev
		}
	}
	return false
}

// relTo returns path relative to dir if path is dir or below it.
func relTo(path, dir string) (string, bool) {
	if path == dir {
		return ".", true
	}
	if dir == "/" {
		return strings.TrimPrefix(path, "/"), true
	}
	if strings.HasPrefix(path, dir+"/") {
		return path[len(dir)+1:], true
	}
	return "", false
}

func firstExisting(h Host, paths ...string) string {
	for _, p := range paths {
		if _, err := h.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// Argv returns the command line of the whole chain; bwrap reads the plan's
// options from ArgsFD.
func (l *Launch) Argv(bwrapPath string) []string {
	var a []string
	a = append(a, l.SystemdRun...)
	a = append(a, l.NetnsEnter...)
	return append(a, bwrap.Argv(bwrapPath, ArgsFD, l.Command)...)
}

// mount is a host directory the sandbox can write, and where it appears
// inside.
type mount struct{ inside, host string }

// writableMounts lists the host directories the sandbox can write: its home,
// its /tmp, and every rw or dev bind of the config, raw bwrap ones included
// (whether or not its condition holds: the agent may have written there in
// an earlier session).
func writableMounts(s Spec) ([]mount, error) {
	ms := []mount{{s.Home, s.SandboxHome}, {"/tmp", s.Tmp}}
	for _, d := range s.Config {
		switch d.Name {
		case sandboxcfg.RW, sandboxcfg.RWTry, sandboxcfg.Dev, sandboxcfg.DevTry:
			dest := d.Args[len(d.Args)-1]
			ms = append(ms, mount{dest, d.Args[0]})
		case sandboxcfg.Bwrap:
			ops, err := rawOps(d.Args)
			if err != nil {
				return nil, &sandboxcfg.Error{Name: s.ConfigName, Line: d.Line, Msg: err.Error()}
			}
			for _, o := range ops {
				if o.IsWritable() {
					ms = append(ms, mount{o.Dest, o.Src})
				}
			}
		}
	}
	return ms, nil
}

// rawOps splits the arguments of a bwrap directive into ops; a bind's
// paths must be absolute, as everywhere in the config.
func rawOps(args []string) ([]bwrap.Op, error) {
	ops, err := bwrap.SplitRaw(args)
	if err != nil {
		return nil, fmt.Errorf("bwrap: %v", err)
	}
	for i, o := range ops {
		if !o.IsBind() {
			continue
		}
		if !filepath.IsAbs(o.Src) || !filepath.IsAbs(o.Dest) {
			return nil, fmt.Errorf("bwrap: bind paths must be absolute: %q %q", o.Src, o.Dest)
		}
		ops[i].Src, ops[i].Dest = filepath.Clean(o.Src), filepath.Clean(o.Dest)
	}
	return ops, nil
}

// origin names the config line d in messages.
func origin(s Spec, d sandboxcfg.Directive) string {
	return fmt.Sprintf("%s:%d: %s", s.ConfigName, d.Line, d.Name)
}

// checkPlanted refuses a directive whose source or destination passes
// through a symlink in a directory the sandbox can write. bwrap follows
// symlinks in both, on the host, before the sandbox exists: a link the agent
// left in ~/.claude-home or in a project would otherwise make the next start
// bind a secret (source) or create files anywhere the user can write
// (destination).
func checkPlanted(h Host, d sandboxcfg.Directive, ms []mount) error {
	var srcs, dests []string
	a := d.Args
	switch d.Name {
	case sandboxcfg.RO, sandboxcfg.ROTry, sandboxcfg.RW, sandboxcfg.RWTry, sandboxcfg.Dev, sandboxcfg.DevTry:
		srcs, dests = a[:1], a[len(a)-1:]
	case sandboxcfg.Tmpfs, sandboxcfg.Dir:
		dests = a[:1]
	case sandboxcfg.Symlink:
		dests = a[1:2]
	case sandboxcfg.Bwrap:
		ops, _ := rawOps(a)
		for _, o := range ops {
			if o.IsBind() {
				srcs, dests = append(srcs, o.Src), append(dests, o.Dest)
			}
		}
	}
	for _, m := range ms {
		for _, p := range srcs {
			if err := noSymlinkBelow(h, m.host, m.host, p); err != nil {
				return fmt.Errorf("%s: %w", d.Name, err)
			}
		}
		for _, p := range dests {
			if err := noSymlinkBelow(h, m.inside, m.host, p); err != nil {
				return fmt.Errorf("%s: %w", d.Name, err)
			}
		}
	}
	return nil
}

// noSymlinkBelow checks, if p lies below root, each existing component of
// p's counterpart below host (host + p relative to root) with Lstat.
func noSymlinkBelow(h Host, root, host, p string) error {
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil
	}
	cur := host
	for _, c := range strings.Split(rel, "/") {
		cur = filepath.Join(cur, c)
		fi, err := h.Lstat(cur)
		if err != nil {
			return nil // missing: bwrap creates a directory, not a link
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s is a symlink in %s, which the sandbox can write: remove it (the agent may have made it) or name the real path", cur, host)
		}
	}
	return nil
}

// agentDecides returns the writable mount (host path) in which the entry
// at path, or an entry on the way to it, lies, or "" if none does: there
// the agent can create, remove or relink it. An entry counts by its name
// and by where it physically is (its directory resolved). A directory
// below the home but for its dot-directories counts as well (~/src for
// ~/src/x/flag): it is the default project of a start there.
func (l *Launch) agentDecides(h Host, s Spec, path string) string {
	var roots []string
	ms, _ := writableMounts(s)
	for _, m := range ms {
		roots = append(roots, m.host)
	}
	for _, o := range l.Plan.Ops {
		if o.IsWritable() {
			roots = append(roots, o.Src)
		}
	}
	for i, r := range roots {
		if real, err := h.EvalSymlinks(r); err == nil {
			roots = append(roots, real)
		}
		roots[i] = filepath.Clean(r)
	}
	q := "/"
	var all []string
	for _, c := range strings.Split(strings.TrimPrefix(filepath.Clean(path), "/"), "/") {
		if c == "" {
			continue
		}
		q = filepath.Join(q, c)
		cands := []string{q}
		if d, err := h.EvalSymlinks(filepath.Dir(q)); err == nil {
			cands = append(cands, filepath.Join(d, c))
		}
		for _, cand := range cands {
			for _, r := range roots {
				if under(cand, r) {
					return r
				}
			}
		}
		all = append(all, cands...)
	}
	// Any directory below the home but its dot-directories is the
	// project of a start there: an earlier sandbox may have written it.
	for _, cand := range all {
		if rel, ok := strings.CutPrefix(cand, s.Home+"/"); ok {
			if top, _, deeper := strings.Cut(rel, "/"); deeper && !strings.HasPrefix(top, ".") {
				return filepath.Join(s.Home, top)
			}
		}
	}
	return ""
}
