package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/claude-sandbox/claude-sandbox/internal/linkwalk"
	qt "github.com/claude-sandbox/claude-sandbox/internal/quote"
)

// What host git consults beyond a repository's .git: the files and
// directories its config names (a hooks directory, included files, the
// programs of fsmonitor, filters, diff and merge drivers, aliases), read
// from the system, global and repository config files and what they
// include, and the targets of the symlinks inside .git. A .git that is
// read-only is no protection when its config says core.hooksPath =
// .husky/_ (a directory the project ignores) or include.path =
// ../.gitconfig: the agent writes there, and the user's next git commit or
// git status on the host runs it. Each such path that lies where the
// sandbox can write is bound read-only onto itself; where that cannot be
// done (it does not exist, or a symlink the sandbox can write is on its
// way), the start is refused.

// gitConsult collects what git consults, for every repository of the
// writable mounts (one gitGuard each), into its own read-only targets.
type gitConsult struct {
	l    *Launch
	h    Host
	s    Spec
	base int
	// global are the entries of the system and global config files
	// (with their includes) naming paths; relative ones are relative
	// to each repository's work tree.
	global []gitNamed
	guards []*gitGuard
	ro     []roTarget
	// expose are git directories outside the mounts, bound read-only.
	expose []string
	// read are the entries of each config file read (with its
	// includes), by host path; nil while it is being read.
	read map[string][]gitNamed
}

// gitNamed is a config entry that names paths, and the file it is in.
type gitNamed struct {
	e       gitConfigEntry
	file    string
	names   []string
	command bool
}

func (n gitNamed) where() string {
	return fmt.Sprintf("%s in %s:%d", n.e.Var, qt.String(n.file), n.e.Line)
}

// globalGitConfigs are the config files every git run reads (besides the
// repository's), in git's order: the system's, then the user's.
func (c *gitConsult) globalGitConfigs() []string {
	env := newEnv(c.s.Environ)
	var files []string
	if v, ok := env.get("GIT_CONFIG_SYSTEM"); ok && filepath.IsAbs(v) {
		files = append(files, v)
	}
	files = append(files, "/etc/gitconfig")
	xdg := filepath.Join(c.s.Home, ".config")
	if v, ok := env.get("XDG_CONFIG_HOME"); ok && filepath.IsAbs(v) {
		xdg = v
	}
	files = append(files, filepath.Join(xdg, "git", "config"), filepath.Join(c.s.Home, ".gitconfig"))
	if v, ok := env.get("GIT_CONFIG_GLOBAL"); ok && filepath.IsAbs(v) {
		files = append(files, v)
	}
	return files
}

// readGlobal reads the system and global config files and protects what
// they name by an absolute path.
func (c *gitConsult) readGlobal() error {
	for _, f := range c.globalGitConfigs() {
		if err := c.readConfig(f, "", 0, &c.global); err != nil {
			return err
		}
	}
	// git -c and the environment's config (GIT_CONFIG_PARAMETERS,
	// GIT_CONFIG_COUNT with GIT_CONFIG_KEY_n and GIT_CONFIG_VALUE_n) come
	// last, as in git, and their includes are read too.
	for _, n := range envGitConfig(newEnv(c.s.Environ)) {
		names, command, include := gitNames(n.e)
		if len(names) == 0 {
			continue
		}
		n.names, n.command = names, command
		if !include {
			c.global = append(c.global, n)
			continue
		}
		p := c.expand(names[0], "")
		if p == "" {
			continue
		}
		if err := c.protect(p, n, true); err != nil {
			return err
		}
		if err := c.readConfig(p, n.e.Var, 1, &c.global); err != nil {
			return err
		}
	}
	for _, n := range c.global {
		if err := c.protectNames(n, ""); err != nil {
			return err
		}
	}
	return nil
}

// repo protects what git consults for the repository with work tree wt,
// git directory gitdir and common directory common.
func (c *gitConsult) repo(wt, gitdir, common string) error {
	named := append([]gitNamed(nil), c.global...)
	local := []string{filepath.Join(common, "config"), filepath.Join(gitdir, "config.worktree")}
	for _, f := range local {
		if err := c.readConfig(f, "", 0, &named); err != nil {
			return err
		}
	}
	for _, n := range named {
		if err := c.protectNames(n, wt); err != nil {
			return err
		}
	}
	return c.dotGitLinks(gitdir, common)
}

// readConfig reads config file f (an include of key when key is not "")
// and, depth first, what it includes, appending the entries that name
// paths to named.
func (c *gitConsult) readConfig(f, key string, depth int, named *[]gitNamed) error {
	if depth > maxGitInclude {
		return fmt.Errorf("git config %s (%s): more than %d levels of includes, which git refuses too: fix it on the host", qt.String(f), key, maxGitInclude)
	}
	real, err := c.resolve(f)
	if err != nil {
		return fmt.Errorf("git config %s: %w", qt.String(f), err)
	}
	if got, ok := c.read[real]; ok {
		// Read for another repository, or being read: an include
		// loop, which git refuses.
		*named = append(*named, got...)
		return nil
	}
	c.read[real] = nil
	var mine []gitNamed
	defer func() {
		c.read[real] = mine
		*named = append(*named, mine...)
	}()
	b, err := c.h.ReadFile(real, MaxGitConfig)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil // git reads nothing there either
	}
	if tl := (*TooLargeError)(nil); errors.As(err, &tl) {
		return fmt.Errorf("git config %s: %d bytes, more than the %d a git config is read to, not read: remove it, or make it smaller on the host", qt.String(f), tl.Size, tl.Max)
	}
	if err != nil {
		return fmt.Errorf("git config %s: %w", qt.String(f), err)
	}
	es, err := parseGitConfig(b)
	if err != nil {
		return fmt.Errorf("git config %s: %w: host git cannot read it either: fix it on the host", qt.String(f), err)
	}
	for _, e := range es {
		names, command, include := gitNames(e)
		if len(names) == 0 {
			continue
		}
		n := gitNamed{e: e, file: f, names: names, command: command}
		if !include {
			mine = append(mine, n)
			continue
		}
		p := c.expand(names[0], filepath.Dir(f))
		if p == "" {
			continue
		}
		if err := c.protect(p, n, true); err != nil {
			return err
		}
		if err := c.readConfig(p, e.Var, depth+1, &mine); err != nil {
			return err
		}
	}
	return nil
}

// expand makes a path of a config value absolute as git does: ~/ is the
// home, a relative path is relative to dir. It returns "" for what git
// resolves elsewhere (~user/, %(prefix)/: the system's, not the sandbox's)
// and for a relative path when there is no dir.
func (c *gitConsult) expand(p, dir string) string {
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		return filepath.Join(c.s.Home, p[1:])
	case strings.HasPrefix(p, "~"), strings.HasPrefix(p, "%(prefix)/"):
		return ""
	case filepath.IsAbs(p):
		return filepath.Clean(p)
	case dir == "":
		return ""
	}
	return filepath.Join(dir, p)
}

// protectNames protects the paths entry n names, relative ones relative to
// the work tree wt (where git runs its commands and looks for a relative
// core.hooksPath); with wt "", only the absolute ones.
func (c *gitConsult) protectNames(n gitNamed, wt string) error {
	if !n.command {
		for _, name := range n.names {
			p := c.expand(name, wt)
			if p == "" {
				continue
			}
			if err := c.protect(p, n, true); err != nil {
				return err
			}
			// Husky's hooks directory (.husky/_) runs the hooks
			// of the directory above it.
			if n.e.Key == "hookspath" && filepath.Base(p) == "_" {
				if err := c.protect(filepath.Dir(p), n, false); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for i, w := range n.names {
		if v, ok := strings.CutPrefix(w, "$HOME/"); ok {
			w = "~/" + v
		} else if v, ok := strings.CutPrefix(w, "${HOME}/"); ok {
			w = "~/" + v
		}
		switch {
		case w == "" || w == "." || w == ".." || strings.Contains(w, "$"):
			continue
		case !strings.Contains(w, "/") && i == 0:
			continue // looked up in PATH
		}
		p := c.expand(w, wt)
		if p == "" || wt != "" && (p == wt || under(wt, p)) {
			continue
		}
		// The program must be there; an argument that names no file
		// is not a path.
		if err := c.protect(p, n, i == 0); err != nil {
			return err
		}
	}
	return nil
}

// dotGitLinks protects the targets of the symlinks in the git directory
// and the common directory, in their hooks and in info: a read-only .git
// whose hooks link to ../githooks runs what the agent writes there.
func (c *gitConsult) dotGitLinks(dirs ...string) error {
	seen := map[string]bool{}
	for _, d := range dirs {
		for _, dir := range []string{d, filepath.Join(d, "hooks"), filepath.Join(d, "info")} {
			if seen[dir] {
				continue
			}
			seen[dir] = true
			ents, _ := c.h.ReadDir(dir)
			for _, e := range ents {
				if e.Type()&fs.ModeSymlink == 0 {
					continue
				}
				l := filepath.Join(dir, e.Name())
				n := gitNamed{e: gitConfigEntry{Var: "a symlink"}, file: l}
				real, err := c.resolve(l)
				if err != nil {
					return fmt.Errorf("git: %s: %w", qt.String(l), err)
				}
				if err := c.protect(real, n, true); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// protect binds host path p read-only wherever the sandbox could write it,
// if it lies in a writable mount. A missing p there is refused when
// mustExist (the agent could make it), else left alone.
func (c *gitConsult) protect(p string, n gitNamed, mustExist bool) error {
	real, err := c.resolve(p)
	if err != nil {
		return fmt.Errorf("%s names %s: %w", n.where(), qt.String(p), err)
	}
	places := c.writableAt(real)
	if len(places) == 0 {
		return nil
	}
	if _, err := c.h.Lstat(real); err != nil {
		if !mustExist && errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("%s names %s, which does not exist in %s, where the sandbox can write: create it on the host (an empty file or directory does) or remove the setting; or add `project ro` in %s",
			n.where(), qt.String(p), qt.String(c.l.Plan.Ops[places[0].mount].Src), c.s.ConfigName)
	}
	for _, t := range places {
		t.why = n.where()
		c.ro = append(c.ro, t)
	}
	return nil
}

// protected reports whether host path p is, or is below, a path already
// to be bound read-only.
func (c *gitConsult) protected(p string) bool {
	check := func(ts []roTarget) bool {
		for _, t := range ts {
			if p == t.host || under(p, t.host) {
				return true
			}
		}
		return false
	}
	if check(c.ro) {
		return true
	}
	for _, g := range c.guards {
		if check(g.ro) {
			return true
		}
	}
	return false
}

// writableAt returns where inside the sandbox can write host path p (a
// path without symlinks), and the op that makes it writable there; none
// when p is protected already.
func (c *gitConsult) writableAt(p string) []roTarget {
	if c.protected(p) {
		return nil
	}
	var out []roTarget
	ops := c.l.Plan.Ops[:c.base]
	for j, o := range ops {
		if !writableBind(o) {
			continue
		}
		src := o.Src
		rel, ok := relTo(p, src)
		if !ok {
			if real, _, err := linkwalk.Resolve(c.h, src); err == nil {
				src = real
				rel, ok = relTo(p, src)
			}
		}
		if !ok {
			continue
		}
		inside := filepath.Join(o.Dest, rel)
		i, r := c.l.covering(inside, c.base)
		if i != j {
			if i < 0 || !writableBind(ops[i]) || filepath.Join(ops[i].Src, r) != filepath.Join(o.Src, rel) {
				continue // shadowed inside by another mount
			}
		}
		out = append(out, roTarget{host: p, inside: inside, mount: i})
	}
	return out
}

// writable reports whether host path p lies where the sandbox can write.
func (c *gitConsult) writable(p string) bool { return len(c.writableAt(p)) > 0 }

// resolve follows the symlinks of p as the host does and returns the path
// reached; a symlink on the way that the sandbox can write is refused (the
// agent could point it anywhere), as is a loop. What does not exist is
// returned as written from there.
func (c *gitConsult) resolve(p string) (string, error) {
	real, err := linkwalk.Walk(c.h, p, func(next string) error {
		if c.writable(next) {
			return fmt.Errorf("%s is a symlink where the sandbox can write (the agent may have made it): replace it by what it names, on the host", qt.String(next))
		}
		return nil
	})
	var missing *linkwalk.MissingError
	switch {
	case errors.As(err, &missing):
		return missing.Rest, nil
	case errors.Is(err, linkwalk.ErrLoop):
		return "", fmt.Errorf("%s: %w", qt.String(p), err)
	}
	return real, err
}

// envGitConfig returns the config entries git takes from the environment:
// GIT_CONFIG_PARAMETERS (what git -c passes on), then GIT_CONFIG_COUNT
// pairs. Each entry's file names the variable it came from.
func envGitConfig(env *environ) []gitNamed {
	var out []gitNamed
	add := func(from, key, value string, noValue bool) {
		first, last := strings.IndexByte(key, '.'), strings.LastIndexByte(key, '.')
		if first <= 0 || last == len(key)-1 {
			return
		}
		e := gitConfigEntry{Section: strings.ToLower(key[:first]), Key: strings.ToLower(key[last+1:]),
			Value: value, NoValue: noValue, Var: key}
		if first < last {
			e.Subsection = key[first+1 : last]
		}
		out = append(out, gitNamed{e: e, file: from})
	}
	if v, ok := env.get("GIT_CONFIG_PARAMETERS"); ok {
		for _, kv := range parseGitConfigParameters(v) {
			add("$GIT_CONFIG_PARAMETERS", kv[0], kv[1], kv[2] == "")
		}
	}
	if v, ok := env.get("GIT_CONFIG_COUNT"); ok {
		n := 0
		for _, c := range v {
			if c < '0' || c > '9' || n > 1<<16 {
				return out
			}
			n = n*10 + int(c-'0')
		}
		for i := 0; i < n; i++ {
			k, ok := env.get(fmt.Sprintf("GIT_CONFIG_KEY_%d", i))
			if !ok {
				break
			}
			val, _ := env.get(fmt.Sprintf("GIT_CONFIG_VALUE_%d", i))
			add(fmt.Sprintf("$GIT_CONFIG_KEY_%d", i), k, val, false)
		}
	}
	return out
}

// parseGitConfigParameters splits GIT_CONFIG_PARAMETERS as git does: a
// list of shell single-quoted words, 'key'='value' or the older
// 'key=value' (which has no value when it holds no =). Each result is key,
// value and "=" when a value was given. It stops at what it cannot parse.
func parseGitConfigParameters(s string) [][3]string {
	var out [][3]string
	i := 0
	word := func() (string, bool) {
		if i >= len(s) || s[i] != '\'' {
			return "", false
		}
		var w []byte
		for {
			i++ // the opening quote
			for i < len(s) && s[i] != '\'' {
				w = append(w, s[i])
				i++
			}
			if i >= len(s) {
				return "", false
			}
			i++ // the closing quote
			// '\'' stands for a quote inside the word.
			if i+2 < len(s) && s[i] == '\\' && s[i+1] == '\'' && s[i+2] == '\'' {
				w = append(w, '\'')
				i += 2
				continue
			}
			return string(w), true
		}
	}
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n') {
			i++
		}
		if i >= len(s) {
			return out
		}
		k, ok := word()
		if !ok {
			return out
		}
		if i < len(s) && s[i] == '=' {
			i++
			v, ok := word()
			if !ok {
				return out
			}
			out = append(out, [3]string{k, v, "="})
			continue
		}
		if key, v, ok := strings.Cut(k, "="); ok {
			out = append(out, [3]string{key, v, "="})
		} else {
			out = append(out, [3]string{k, "", ""})
		}
	}
}
