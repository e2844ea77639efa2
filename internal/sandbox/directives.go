package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
	qname "github.com/claude-sandbox/claude-sandbox/internal/quote"
	"github.com/claude-sandbox/claude-sandbox/internal/sandboxcfg"
)

// directives applies the user's config, in order: each directive whose
// conditions hold, once checked against symlinks the agent may have
// planted. It returns the config's command, nil if none.
func (l *Launch) directives(h Host, s Spec, env, chain *environ, proj projectPlan) ([]string, error) {
	var command []string
	writable, err := allWritable(s, proj)
	if err != nil {
		return nil, err
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
	return command, nil
}

// allWritable lists the mounts the sandbox can write: writableMounts and
// the project when it is read-write.
func allWritable(s Spec, proj projectPlan) ([]mount, error) {
	writable, err := writableMounts(s)
	if err != nil {
		return nil, err
	}
	if proj.RW {
		writable = append(writable, mount{proj.Dir, proj.Dir})
	}
	return writable, nil
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
				return fmt.Errorf("%s: %s does not exist (use %s-try to skip a missing path)", d.Name, qname.String(src), strings.TrimSuffix(d.Name, "-try"))
			}
			return fmt.Errorf("%s: %w", d.Name, err)
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
	case sandboxcfg.Keepenv:
		// Applied with the environment's scrub (tokens.go).
	case sandboxcfg.Chdir:
		if !l.Visible(h, a[0]) {
			return fmt.Errorf("chdir: %s is not visible in the sandbox", qname.String(a[0]))
		}
		p.Chdir = a[0]
	case sandboxcfg.Command:
		if !l.Visible(h, a[0]) {
			return fmt.Errorf("command: %s is not visible in the sandbox", qname.String(a[0]))
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
	case sandboxcfg.Project, sandboxcfg.Git, sandboxcfg.GitPush, sandboxcfg.Home, sandboxcfg.Toolchains:
		// Decided before the config's mounts (project.go, agentgit.go).
	case sandboxcfg.Network:
		// Decided before the plan (network.go).
	case sandboxcfg.Cache:
		// Decided with the home (cache.go).
	case sandboxcfg.Limit, sandboxcfg.Budget:
		// Gathered here, where the conditions hold; decided after the
		// config (budgets.go).
		return l.addLimit(d)
	default:
		return fmt.Errorf("unknown directive %q", d.Name)
	}
	return nil
}

// mount is a host directory the sandbox can write, and where it appears
// inside.
type mount struct{ inside, host string }

// writableMounts lists the host directories the sandbox can write: its home,
// its /tmp when that is a directory (CLAUDE_SBX_TMP), and every rw or dev bind of the config, raw bwrap ones included
// (whether or not its condition holds: the agent may have written there in
// an earlier session).
func writableMounts(s Spec) ([]mount, error) {
	ms := []mount{{s.Home, s.SandboxHome}}
	if s.Tmp != "" {
		ms = append(ms, mount{"/tmp", s.Tmp})
		// Every project's /tmp below it, written by other starts.
		if s.tmpRoot != "" && s.tmpRoot != s.Tmp {
			ms = append(ms, mount{"", s.tmpRoot})
		}
	} else {
		ms = append(ms, mount{"", LegacyTmp(s.UID)})
	}
	// Every sandbox home: the shared one and those of other projects
	// were written by other starts (home.go).
	if s.sharedHome != "" && s.sharedHome != s.SandboxHome {
		ms = append(ms, mount{"", s.sharedHome})
	}
	if s.Homes != "" {
		ms = append(ms, mount{"", s.Homes})
	}
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
		return nil, fmt.Errorf("bwrap: %w", err)
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
			return fmt.Errorf("%s is a symlink in %s, which the sandbox can write: remove it (the agent may have made it) or name the real path", qname.String(cur), qname.String(host))
		}
	}
	return nil
}
