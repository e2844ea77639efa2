package sandbox

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
	"github.com/claude-sandbox/claude-sandbox/internal/linkwalk"
	qname "github.com/claude-sandbox/claude-sandbox/internal/quote"
	"github.com/claude-sandbox/claude-sandbox/internal/sandboxcfg"
)

// projectPlan is the decision about the working directory's project.
type projectPlan struct {
	// Dir is the project bound at its own path, "" if none.
	Dir string
	// RW tells whether it is bound read-write.
	RW bool
	// notShown says why the working directory is not bound ("" if it
	// is) and fix which config line would show it.
	notShown, fix string
}

// projectMode returns the mode the config asks for (the last project
// directive whose conditions hold) and where it was said; rw by default.
func (l *Launch) projectMode(h Host, s Spec) (string, string, error) {
	args, from, err := l.setting(h, s, sandboxcfg.Project, []string{sandboxcfg.ProjectRW})
	if err != nil {
		return "", "", err
	}
	return args[0], from, nil
}

// addProject binds the project of the working directory at its own path
// and starts there, when the working directory is strictly below the home
// and not in the sandbox home, the private tmp or a dot-directory of the
// home (~/.ssh, ~/.config: secrets and settings, not projects). The project
// is the root of the git checkout the working directory is in, else the
// working directory.
func (l *Launch) addProject(h Host, s Spec) (projectPlan, error) {
	dir, why, pp := projectCandidate(h, s)
	// The mode is decided as if the project were bound read-write: an `if
	// exists` inside it is the agent's to decide, and refused.
	n := len(l.Plan.Ops)
	if dir != "" {
		l.Plan.Ops = append(l.Plan.Ops, bwrap.Op{Kind: bwrap.Bind, Src: dir, Dest: dir})
	}
	mode, from, err := l.projectMode(h, s)
	l.Plan.Ops = l.Plan.Ops[:n]
	if err != nil {
		return projectPlan{}, err
	}
	if mode == sandboxcfg.ProjectOff {
		l.Notes = append(l.Notes, "project: none: project off ("+from+")")
		return projectPlan{}, nil
	}
	if dir == "" {
		return pp, nil
	}
	pwd, home := s.Pwd, s.Home
	rw := mode == sandboxcfg.ProjectRW
	if rw {
		// What the host runs must not lie where the sandbox writes.
		if p := s.hostRuns(h, dir, l.writableElsewhere(s, dir)); p != "" {
			pp.notShown = fmt.Sprintf("its project %s holds %s, which the host runs or reads", qname.String(dir), p)
			pp.fix = fmt.Sprintf("add `project ro` to %s to show it read-only", s.ConfigName)
			return pp, nil
		}
	}
	// bwrap makes the mount point's parents in the sandbox home.
	if err := noSymlinkBelow(h, home, s.SandboxHome, dir); err != nil {
		return pp, fmt.Errorf("project %s: %w", qname.String(dir), err)
	}
	kind, how := bwrap.Bind, "read-write"
	if !rw {
		kind, how = bwrap.ROBind, "read-only"
	}
	l.Plan.Ops = append(l.Plan.Ops, bwrap.Op{Kind: kind, Src: dir, Dest: dir})
	l.Plan.Chdir = pwd
	l.Notes = append(l.Notes, fmt.Sprintf("project: %s (%s) %s (%s); starts in %s", dir, why, how, from, pwd))
	pp.Dir, pp.RW = dir, rw
	return pp, nil
}

// writableElsewhere lists the host directories other than dir that the
// sandbox can write: its home and /tmp, the caches, the config's rw, rw-try
// and dev binds.
func (l *Launch) writableElsewhere(s Spec, dir string) []string {
	var out []string
	ms, _ := writableMounts(s)
	for _, m := range ms {
		out = append(out, m.host)
	}
	for _, o := range l.Plan.Ops {
		if o.IsWritable() {
			out = append(out, o.Src)
		}
	}
	var keep []string
	for _, w := range out {
		if w = filepath.Clean(w); w != "" && w != "." && w != dir && w != s.Home && !under(s.Home, w) {
			keep = append(keep, w)
		}
	}
	return keep
}

// projectCandidate returns the project of the working directory and why it
// is that one, or "" and, in pp, why nothing is shown.
func projectCandidate(h Host, s Spec) (dir, why string, pp projectPlan) {
	pwd, home := s.Pwd, s.Home
	switch {
	case pwd == "":
		pp.notShown = "it is unknown"
		return "", "", pp
	case pwd == home:
		pp.notShown, pp.fix = "it is your home, which the sandbox never shows", "start claude in a project directory below it"
		return "", "", pp
	case under(home, pwd):
		pp.notShown, pp.fix = "it holds your home, which the sandbox never shows", "start claude in a project directory below your home"
		return "", "", pp
	case !under(pwd, home):
		pp.notShown = "it is not below your home"
		if systemDir(pwd) {
			pp.fix = fmt.Sprintf("add `ro %s` to %s to show it", qname.String(pwd), s.ConfigName)
		} else {
			pp.fix = fmt.Sprintf("add `rw %s` (or ro) to %s to show it", qname.String(pwd), s.ConfigName)
		}
		return "", "", pp
	case pwd == s.SandboxHome || under(pwd, s.SandboxHome):
		pp.notShown = "it is in the sandbox home " + s.SandboxHome + ", which is the home inside"
		return "", "", pp
	case pwd == s.Tmp || under(pwd, s.Tmp) || s.tmpRoot != "" && (pwd == s.tmpRoot || under(pwd, s.tmpRoot)):
		root := s.Tmp
		if s.tmpRoot != "" {
			root = s.tmpRoot
		}
		pp.notShown = "it is in the private tmp " + root + ", whose directories are /tmp inside"
		return "", "", pp
	}
	rel := strings.TrimPrefix(pwd, home+"/")
	if top, _, _ := strings.Cut(rel, "/"); strings.HasPrefix(top, ".") {
		pp.notShown = fmt.Sprintf("it is in ~/%s, which holds settings or secrets, not projects", qname.String(top))
		pp.fix = fmt.Sprintf("add `ro %s` to %s to show it", qname.String(pwd), s.ConfigName)
		return "", "", pp
	}
	dir, why = pwd, "the working directory"
	for d := pwd; under(d, home); d = filepath.Dir(d) {
		if _, err := h.Lstat(filepath.Join(d, ".git")); err == nil {
			dir = d
			if d != pwd {
				why = "the root of the git checkout the working directory is in"
			} else {
				why = "the working directory, a git checkout's root"
			}
			break
		}
	}
	return dir, why, pp
}

// hostRuns returns a path below dir that the host executes or reads as
// configuration, or "": a directory of the launcher's PATH, the
// netns-enter helper, the agent's directory, the launcher's executable, the
// config file or a symlink hop on its way, or the target of a symlink of
// the home's dot-files, of ~/.config or of a PATH directory. Each path is
// resolved as the kernel will (reaches): a dangling link names what the
// agent can create, and a path that cannot be resolved counts as inside.
// writable are the other places the sandbox writes, which the scan for
// hard links skips.
func (s Spec) hostRuns(h Host, dir string, writable []string) string {
	h = newMemoHost(h)
	env := newEnv(s.Environ)
	path, _ := env.get("PATH")
	// The agent's directory too: claude-update runs what it installs
	// there, on the host.
	// And the launcher itself, which the user runs at every start.
	cands := []string{s.NetnsEnter, s.BinDir}
	if s.Launcher != "" {
		cands = append(cands, s.Launcher)
	}
	var pathDirs []string
	for _, p := range filepath.SplitList(path) {
		if !filepath.IsAbs(p) {
			// Relative to wherever the user's shell is: the project too.
			return fmt.Sprintf("%q of your PATH (a relative directory)", p)
		}
		pathDirs = append(pathDirs, filepath.Clean(p))
	}
	cands = append(cands, pathDirs...)
	// Configuration that the environment points the user's shells and
	// tools at: all of it, or the project inside it.
	for _, k := range configVars {
		v, ok := env.get(k)
		if !ok || !filepath.IsAbs(v) {
			continue
		}
		v = filepath.Clean(v)
		cands = append(cands, v)
		real, _, err := linkwalk.Resolve(h, v)
		if err != nil {
			return unresolved(v, err, "")
		}
		for _, c := range []string{v, real} {
			if under(dir, c) && c != s.Home && !under(s.Home, c) {
				return fmt.Sprintf("%s (in $%s %s)", qname.String(dir), k, qname.String(v))
			}
		}
	}
	for _, p := range cands {
		if p == dir || under(p, dir) {
			return p
		}
		if r := reaches(h, p, dir, "", ""); r != "" {
			return r
		}
	}
	// The config file and every link on its way.
	cfg := filepath.Join(s.Home, ".claude-sandbox-init")
	real, hops, err := linkwalk.Resolve(h, cfg)
	if err != nil {
		return unresolved(cfg, err, "")
	}
	for _, p := range append(hops, real) {
		if p == dir || under(p, dir) {
			return p
		}
	}
	// Links into the project from where the host looks for what it runs
	// or reads as configuration: the home's dot-files (~/.bashrc,
	// ~/.gitconfig, a dotfiles repository's links), the entries of
	// ~/.config, ~/.ssh (ProxyCommand) and ~/.gnupg (pinentry-program),
	// and the programs in every PATH directory (a link
	// ~/.local/bin/claude to a checkout's build, or one that sudo ln -s
	// made in /usr/local/bin).
	dirs := []string{s.Home, filepath.Join(s.Home, ".config"), filepath.Join(s.Home, ".ssh"), filepath.Join(s.Home, ".gnupg")}
	if x, ok := env.get("XDG_CONFIG_HOME"); ok && filepath.IsAbs(x) {
		dirs = append(dirs, filepath.Clean(x))
	}
	nHome := len(dirs)
	dirs = append(dirs, pathDirs...)
	seen := map[string]bool{}
	for i, d := range dirs {
		if seen[d] {
			continue
		}
		seen[d] = true
		// The types as the directory tells them: no stat of each entry.
		ents, _ := h.ReadDir(d)
		for _, e := range ents {
			if e.Type()&fs.ModeSymlink == 0 || (i == 0 && !strings.HasPrefix(e.Name(), ".")) {
				continue
			}
			l := filepath.Join(d, e.Name())
			// The project itself, something in it, or a directory
			// that holds it (other than the home and above).
			note := ""
			if i >= nHome {
				note = ", in your PATH directory " + qname.String(d)
			}
			if r := reaches(h, l, dir, s.Home, note); r != "" {
				return r
			}
		}
	}
	return s.hardlinked(h, dir, pathDirs, writable)
}

// reaches tells how the host path p, resolved as the kernel will, reaches
// into dir: its target there, or a symlink hop on its way that lies there
// (the agent can point it anywhere); "" if it does not. A p that cannot be
// resolved counts as reaching it. With home set, a target holding dir
// counts too, unless it is the home or above it. note ends the line's
// parenthesis.
func reaches(h Host, p, dir, home, note string) string {
	real, hops, err := linkwalk.Resolve(h, p)
	if err != nil {
		return unresolved(p, err, note)
	}
	for _, l := range hops {
		if l != p && (l == dir || under(l, dir)) {
			return fmt.Sprintf("%s (a symlink on the way from %s%s)", qname.String(l), qname.String(p), note)
		}
	}
	if real == p {
		return ""
	}
	if real == dir || under(real, dir) || (home != "" && under(dir, real) && real != home && !under(home, real)) {
		return fmt.Sprintf("%s (the target of %s%s)", qname.String(real), qname.String(p), note)
	}
	return ""
}

// unresolved says that p, which cannot be resolved, counts as inside.
func unresolved(p string, err error, note string) string {
	return fmt.Sprintf("perhaps %s (it cannot be resolved: %v; counted as inside%s)", qname.String(p), err, note)
}

// configVars name files or directories of configuration that the user's
// shells and tools read (and may run: $BASH_ENV, $ENV, zsh's
// $ZDOTDIR/.zshenv, git's core.fsmonitor).
var configVars = []string{"XDG_CONFIG_HOME", "ZDOTDIR", "GIT_CONFIG_GLOBAL", "BASH_ENV", "ENV", "INPUTRC"}

// shows reports whether path inside the sandbox is the host's path: the
// last op covering it binds the host path at its own place.
func (l *Launch) shows(path string) bool {
	i, rel := l.covering(path, len(l.Plan.Ops))
	if i < 0 {
		return false
	}
	o := l.Plan.Ops[i]
	return o.IsBind() && filepath.Join(o.Src, rel) == path
}

// covering returns the index of the last of the first n ops whose
// destination is path or above it, and path relative to that destination;
// -1 if none.
func (l *Launch) covering(path string, n int) (int, string) {
	ops := l.Plan.Ops[:n]
	for i := len(ops) - 1; i >= 0; i-- {
		o := ops[i]
		if o.Kind == bwrap.Raw || o.Kind == bwrap.Setenv || o.Kind == bwrap.Unsetenv {
			continue
		}
		if rel, ok := relTo(path, o.Dest); ok {
			return i, rel
		}
	}
	return -1, ""
}

// systemDir reports whether path is in a directory of the system, which a
// hint should not suggest binding read-write.
func systemDir(path string) bool {
	for _, d := range []string{"/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/dev", "/proc", "/sys", "/run", "/var", "/opt", "/root", "/home"} {
		if path == d || under(path, d) {
			return true
		}
	}
	return false
}
