package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
	"github.com/claude-sandbox/claude-sandbox/internal/sandboxcfg"
	"github.com/claude-sandbox/claude-sandbox/internal/toolchain"
)

// cacheVars name caches and tool homes that must be the sandbox's own: a
// value outside the home would name a host directory that is not there
// inside (or, bound, one the host's tools run from), so it is dropped and
// the tool uses its default below the sandbox's home.
var cacheVars = []string{"GOPATH", "GOMODCACHE", "GOCACHE", "CARGO_HOME", "CARGO_TARGET_DIR", "npm_config_cache", "NPM_CONFIG_CACHE", "PIP_CACHE_DIR", "XDG_CACHE_HOME"}

// toolchainDirs returns the directories toolchains are looked for in: the
// last toolchains directive that applies, else auto (the launcher's PATH).
func (l *Launch) toolchainDirs(h Host, s Spec) ([]string, string, error) {
	args, from, err := l.setting(h, s, sandboxcfg.Toolchains, []string{sandboxcfg.ToolchainsAuto})
	if err != nil {
		return nil, "", err
	}
	var dirs []string
	for _, a := range args {
		switch a {
		case sandboxcfg.ToolchainsOff:
			return nil, from, nil
		case sandboxcfg.ToolchainsAuto:
			// The launcher's own PATH, before the environment phase
			// replaced it.
			p, _ := newEnv(s.Environ).get("PATH")
			dirs = append(dirs, filepath.SplitList(p)...)
		default:
			dirs = append(dirs, a)
		}
	}
	return dirs, from, nil
}

// toolchains binds the toolchains found from PATH (or the config)
// read-only, makes the inside PATH list them in the host's order, and
// carries their registry settings without credentials.
func (l *Launch) toolchains(h Host, s Spec, env *environ, proj projectPlan) error {
	start := len(l.Plan.Ops)
	defer l.beforeProject(start, proj)
	dirs, from, err := l.toolchainDirs(h, s)
	if err != nil {
		return err
	}
	writable, err := allWritable(s, proj)
	if err != nil {
		return err
	}
	var w []string
	for _, m := range writable {
		w = append(w, m.host)
	}
	plan := toolchain.Make(h, toolchain.Input{
		Home:     s.Home,
		Dirs:     dirs,
		Visible:  func(p string) bool { return l.visibleAsHost(h, p) },
		Writable: w,
	})
	if len(dirs) == 0 {
		l.Notes = append(l.Notes, "toolchains: off ("+from+")")
	}
	var npmPrefixes []string
	for _, t := range plan.Toolchains {
		for _, r := range t.Roots {
			l.Plan.Ops = append(l.Plan.Ops, bwrap.Op{Kind: bwrap.ROBind, Src: r, Dest: r, Origin: "toolchain " + t.Name})
			if _, err := h.Stat(filepath.Join(r, "bin", "npm")); err == nil {
				npmPrefixes = append(npmPrefixes, r)
			}
		}
		l.Notes = append(l.Notes, fmt.Sprintf("toolchain: %s: %s read-only (from %s)", t.Name, strings.Join(t.Roots, " "), t.Why))
	}
	// A credential file inside a root is hidden: an empty device no one
	// can open (binds are nodev), which npm and pip skip like a missing
	// file.
	for _, m := range plan.Masks {
		l.Plan.Ops = append(l.Plan.Ops, bwrap.Op{Kind: bwrap.ROBind, Src: "/dev/null", Dest: m, Origin: "toolchain credentials hidden"})
		l.Notes = append(l.Notes, "toolchain: "+m+" hidden: credentials are kept there")
	}
	for _, sk := range plan.Skipped {
		l.Notes = append(l.Notes, fmt.Sprintf("toolchain: not shown: %s %s", sk.Path, sk.Why))
	}

	// PATH inside: the agent's directory, then the host's order, then the
	// system's directories it lacks.
	path := []string{}
	if _, err := h.Stat(s.BinDir); err == nil {
		path = append(path, s.BinDir)
	}
	seen := map[string]bool{s.BinDir: true}
	for _, d := range plan.Path {
		if !seen[d] && l.Visible(h, d) {
			seen[d] = true
			path = append(path, d)
		}
	}
	for _, d := range pathDirs {
		if !seen[d] && l.Visible(h, d) {
			seen[d] = true
			path = append(path, d)
		}
	}
	if np := strings.Join(path, ":"); np != env.vals["PATH"] {
		l.setInside(env, "PATH", np)
	}

	for _, k := range cacheVars {
		if v, ok := env.get(k); ok && !under(v, s.Home) {
			env.unset(k)
			l.Plan.Ops = append(l.Plan.Ops, bwrap.Op{Kind: bwrap.Unsetenv, Dest: k})
			l.EnvRemoved = append(l.EnvRemoved, k)
		}
	}
	if len(dirs) == 0 {
		return nil
	}
	cargoHome, _ := newEnv(s.Environ).get("CARGO_HOME")
	st := toolchain.ReadSettings(settingsFiles{h, s.Home, w}, toolchain.SettingsInput{
		Home:        s.Home,
		Getenv:      func(k string) string { v, _ := env.get(k); return v },
		NpmPrefixes: npmPrefixes,
		CargoHome:   cargoHome,
		Writable:    w,
	})
	shown := map[string]bool{}
	for _, f := range st.Files {
		if why := l.showCertFile(h, s.Home, f, w); why != "" {
			l.Notes = append(l.Notes, "toolchain settings: "+f+" not shown: "+why)
			continue
		}
		shown[f] = true
	}
	for _, kv := range st.Env {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasSuffix(k, "CERT") || strings.HasSuffix(k, "CERTS") || strings.HasSuffix(k, "cafile") {
			if !shown[v] {
				continue
			}
		}
		l.setInside(env, k, v)
	}
	for _, n := range st.Notes {
		l.Notes = append(l.Notes, "toolchain settings: "+n)
	}
	isShown := func(f string) bool { return shown[f] }
	if data := toolchain.Npmrc(st.Npmrc, isShown); data != nil && l.generate(InsideNpmrc, data) {
		// The user config npm reads inside: the generated file. Every
		// spelling of the variable goes, as npm reads them all.
		for _, k := range append([]string(nil), env.order...) {
			if strings.EqualFold(k, "npm_config_userconfig") && k != "npm_config_userconfig" {
				env.unset(k)
				l.Plan.Ops = append(l.Plan.Ops, bwrap.Op{Kind: bwrap.Unsetenv, Dest: k})
				l.EnvRemoved = append(l.EnvRemoved, k)
			}
		}
		l.setInside(env, "npm_config_userconfig", InsideNpmrc)
	}
	if data := toolchain.CargoConfig(st.Cargo, isShown); data != nil {
		l.generate(InsideCargoConfig, data)
	}
	return nil
}

// Where the generated settings are inside, read-only, in no host
// directory: npm reads InsideNpmrc as its user config
// (npm_config_userconfig); cargo reads InsideCargoConfig as the
// configuration of the root directory, below every project's own and
// the sandbox home's ~/.cargo/config.toml when the project is in the home.
const (
	InsideNpmrc       = "/run/claude-sandbox/toolchain/npmrc"
	InsideCargoConfig = "/.cargo/config.toml"
)

// generate makes a file of the launcher's at dest, read-only, if dest lies
// in no bind of a host directory (where bwrap would make the file to
// mount on).
func (l *Launch) generate(dest string, data []byte) bool {
	if i, _ := l.covering(dest, len(l.Plan.Ops)); i >= 0 && l.Plan.Ops[i].IsBind() {
		l.Notes = append(l.Notes, "toolchain settings: "+dest+" not made: it lies in "+l.Plan.Ops[i].Dest+", a directory of the host")
		return false
	}
	l.Plan.Ops = append(l.Plan.Ops, bwrap.Op{Kind: bwrap.ROData, Dest: dest, Data: data, Perms: 0o444, Origin: "toolchain settings"})
	return true
}

// settingsFiles reads the user's configuration files for the toolchains'
// settings: not through a symlink the sandbox may have made, nor where it
// writes (the fd binder's rule for a bind source).
type settingsFiles struct {
	h        Host
	home     string
	writable []string
}

func (f settingsFiles) ReadFile(p string) ([]byte, error) {
	real, hops, err := toolchain.Resolve(f.h, p)
	if err != nil {
		return nil, err
	}
	if why := toolchain.HopRisk(f.home, f.writable, hops); why != "" {
		return nil, errors.New(why)
	}
	for _, w := range f.writable {
		if real == w || under(real, w) {
			return nil, errors.New("it is " + real + ", in " + w + ", which the sandbox can write")
		}
	}
	return f.h.ReadFile(real, MaxSettingsFile)
}

// showCertFile shows a CA file a setting names, read-only at its path,
// if it holds certificates only and is not reached through a place the
// sandbox can write; else it says why not. The fd binder checks the path
// again on an open fd when it binds it.
func (l *Launch) showCertFile(h Host, home, f string, writable []string) string {
	real, hops, err := toolchain.Resolve(h, f)
	if err != nil {
		return "it does not exist"
	}
	if why := toolchain.HopRisk(home, writable, hops); why != "" {
		return "it " + why
	}
	if l.visibleAsHost(h, real) && l.visibleAsHost(h, f) {
		// Shown already (the system's CA bundle under /etc/ssl): nothing
		// to bind, nothing to vet.
		return ""
	}
	for _, p := range []string{f, real} {
		for _, w := range writable {
			if p == w || under(p, w) {
				return "it lies in " + w + ", which the sandbox can write"
			}
		}
		if c := toolchain.Secret(home, p); c != "" {
			return "it lies in " + c + ", where credentials are kept"
		}
	}
	data, err := h.ReadFile(real, MaxSettingsFile)
	if err != nil {
		return "it cannot be read: " + err.Error()
	}
	if err := toolchain.CertsOnly(data); err != nil {
		return err.Error()
	}
	if !l.visibleAsHost(h, real) {
		l.Plan.Ops = append(l.Plan.Ops, bwrap.Op{Kind: bwrap.ROBind, Src: real, Dest: real, Origin: "toolchain settings"})
	}
	if real != f && !l.visibleAsHost(h, f) {
		l.Plan.Ops = append(l.Plan.Ops, bwrap.Op{Kind: bwrap.ROBind, Src: real, Dest: f, Origin: "toolchain settings"})
	}
	return ""
}

// beforeProject moves the ops from start on before the project's bind:
// the toolchains stand with the system's mounts. They never overlap the
// project (no root lies in or holds what the sandbox can write), so the
// order changes nothing but where the dry run shows them.
func (l *Launch) beforeProject(start int, proj projectPlan) {
	ops := l.Plan.Ops
	at := -1
	for i := 0; i < start; i++ {
		if proj.Dir != "" && ops[i].IsBind() && ops[i].Dest == proj.Dir {
			at = i
			break
		}
	}
	if at < 0 || start == len(ops) {
		return
	}
	moved := append([]bwrap.Op(nil), ops[start:]...)
	rest := append([]bwrap.Op(nil), ops[at:start]...)
	l.Plan.Ops = append(append(ops[:at], moved...), rest...)
}

// setInside sets a variable for the sandbox only (bwrap --setenv), and
// records it for the dry run.
func (l *Launch) setInside(env *environ, k, v string) {
	env.set(k, v)
	l.Plan.Ops = append(l.Plan.Ops, bwrap.Op{Kind: bwrap.Setenv, Src: k, Dest: v})
	for i, kv := range l.EnvSet {
		if strings.HasPrefix(kv, k+"=") {
			l.EnvSet[i] = k + "=" + v
			return
		}
	}
	l.EnvSet = append(l.EnvSet, k+"="+v)
}

// visibleAsHost reports whether path is visible inside as the host's own
// file at the same path: the last op that covers it binds it from there.
func (l *Launch) visibleAsHost(h Host, path string) bool {
	i, rel := l.covering(path, len(l.Plan.Ops))
	if i < 0 {
		return false
	}
	switch o := l.Plan.Ops[i]; {
	case o.IsBind() && o.Src == o.Dest:
		_, err := h.Stat(filepath.Join(o.Src, rel))
		return err == nil
	case o.Kind == bwrap.Symlink:
		return l.Visible(h, path)
	}
	return false
}

// SystemVisible reports whether path is one of the system directories the
// launcher binds read-only at the same path where they exist (/usr/bin,
// /bin, ...), or lies in one: what toolchain.Input.Visible answers before
// any toolchain is bound. The doctor uses it to show what the launcher
// would show.
func SystemVisible(path string) bool {
	path = filepath.Clean(path)
	for _, d := range append(append([]string(nil), usrDirs...), rootDirs...) {
		if path == d || under(path, d) {
			return true
		}
	}
	return false
}
