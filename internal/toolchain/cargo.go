package toolchain

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
)

// cargoKeys are the cargo settings carried, by table: source replacement,
// the registries' indexes, how to reach them. Nothing else of a cargo
// configuration is: not [registry] or [registries.NAME] token,
// credential-provider, global-credential-providers, nor anything of
// credentials.toml, which is never read.
var cargoKeys = map[string]map[string]tomlKind{
	"source":     {"replace-with": tomlString, "registry": tomlString, "local-registry": tomlString, "directory": tomlString},
	"registries": {"index": tomlString},
	"http":       {"cainfo": tomlString, "proxy": tomlString, "check-revoke": tomlBool},
	"net":        {"git-fetch-with-cli": tomlBool, "offline": tomlBool},
}

// cargoName reports whether s is a source or registry name cargo's own
// config accepts and a bare TOML key: 1 to 64 of letters, digits, _ and -.
func cargoName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !alnum(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// cargo collects the cargo settings from $CARGO_HOME/config (or
// config.toml: cargo reads config when both exist).
func (s *settingsBuilder) cargo() {
	home := s.in.CargoHome
	if !filepath.IsAbs(home) {
		home = filepath.Join(s.in.Home, ".cargo")
	}
	if w := inAny(filepath.Join(home, "config"), s.in.Writable); w != "" {
		s.note("%s: not read: it lies in %s, which the sandbox can write", home, w)
		return
	}
	var f string
	var b []byte
	for _, name := range []string{"config", "config.toml"} {
		f = filepath.Join(home, name)
		var there bool
		if b, there = s.readOr(f); there {
			break
		}
	}
	if b == nil {
		return
	}
	entries, err := parseTOML(string(b))
	if err != nil {
		s.note("%s: not read: %s", f, err.Error())
		return
	}
	var carried, left []string
	for _, e := range entries {
		name := strings.Join(e.Path, ".")
		sect, key, why := cargoSetting(e)
		if why == "" {
			why = s.cargoValue(f, sect, key, &e)
		}
		if why != "" {
			if why != "-" {
				s.note("%s: cargo %s left out: %s", f, quoteKey(name), why)
			} else {
				left = append(left, quoteKey(name))
			}
			continue
		}
		carried = append(carried, name)
	}
	if len(carried) > 0 {
		s.note("%s: cargo settings carried: %s", f, strings.Join(carried, " "))
	}
	if len(left) > 0 {
		s.note("%s: cargo settings left out: %s", f, strings.Join(left, " "))
	}
}

// cargoSetting returns the table and key of a setting that is carried, or
// why not ("-": not one of those carried).
func cargoSetting(e tomlEntry) (sect, key, why string) {
	p := e.Path
	var top string
	switch len(p) {
	case 2:
		top, sect, key = p[0], p[0], p[1]
		if top == "source" || top == "registries" {
			return "", "", "-"
		}
	case 3:
		top, sect, key = p[0], p[0]+"."+p[1], p[2]
		if top != "source" && top != "registries" {
			return "", "", "-"
		}
		if !cargoName(p[1]) {
			return "", "", "not a plain name"
		}
	default:
		return "", "", "-"
	}
	kind, ok := cargoKeys[top][key]
	switch {
	case !ok:
		return "", "", "-"
	case kind != e.Kind:
		return "", "", "not a plain string or boolean"
	}
	return sect, key, ""
}

// cargoValue checks the value and adds the setting, or says why not.
func (s *settingsBuilder) cargoValue(from, sect, key string, e *tomlEntry) string {
	v := e.Value
	if e.Kind == tomlBool {
		s.out.Cargo = append(s.out.Cargo, Setting{Section: sect, Key: key, Value: v, Bare: true})
		return ""
	}
	if why := notPlain(v); why != "" {
		return why
	}
	st := Setting{Section: sect, Key: key, Value: v}
	switch key {
	case "replace-with":
		if !cargoName(v) {
			return "not a plain name"
		}
	case "local-registry", "directory":
		if !filepath.IsAbs(v) {
			return "not an absolute path"
		}
	case "cainfo":
		if !filepath.IsAbs(v) || !s.caFile(key, v, from) {
			return "the file is not shown"
		}
		st.CA = v
	default: // registry, index, proxy: a URL
		u, why := cargoURL(v, key == "proxy")
		if why != "" {
			return why
		}
		st.Value = u
	}
	s.out.Cargo = append(s.out.Cargo, st)
	return ""
}

// cargoURL checks a registry index (sparse+https://..., https://...,
// file:///...) or a proxy ([user:pass@]host:port, http://...) and drops
// user:password@.
func cargoURL(v string, proxy bool) (string, string) {
	if proxy {
		return plainURL(v)
	}
	prefix := ""
	if rest, ok := strings.CutPrefix(v, "sparse+"); ok {
		prefix, v = "sparse+", rest
	}
	if strings.HasPrefix(v, "file:///") && !strings.ContainsAny(v, "?#@") {
		return prefix + v, ""
	}
	if !strings.Contains(v, "://") {
		return "", "not a URL"
	}
	u, why := plainURL(v)
	return prefix + u, why
}

// quoteKey shows a key path from a file in a note: plain, or quoted.
func quoteKey(k string) string {
	if notPlain(k) == "" && !strings.ContainsAny(k, " =[]") {
		return k
	}
	return "(a key that is not plain text)"
}

// CargoConfig writes the generated cargo configuration: settings whose CA
// file is not shown are left out.
func CargoConfig(set []Setting, shown func(string) bool) []byte {
	var b bytes.Buffer
	b.WriteString("# Generated by claude for the sandbox from your cargo configuration, without\n# credentials. Read-only: a project's .cargo/config.toml and CARGO_* variables win.\n")
	// One table each, in the order first met: a table twice is an
	// error in TOML, and so is a key twice (the first is kept).
	set = slices.Clone(set)
	order := map[string]int{}
	for _, st := range set {
		if _, ok := order[st.Section]; !ok {
			order[st.Section] = len(order)
		}
	}
	slices.SortStableFunc(set, func(a, b Setting) int { return order[a.Section] - order[b.Section] })
	done := map[[2]string]bool{}
	sect, n := "", 0
	for _, st := range set {
		if done[[2]string{st.Section, st.Key}] {
			continue
		}
		done[[2]string{st.Section, st.Key}] = true
		if st.CA != "" && !shown(st.CA) || !oneLine(st.Section, st.Key, st.Value) || strings.ContainsAny(st.Value, `"\`) {
			continue
		}
		if st.Section != sect || n == 0 {
			b.WriteString("\n[" + st.Section + "]\n")
			sect = st.Section
		}
		v := st.Value
		if !st.Bare {
			v = `"` + v + `"`
		}
		b.WriteString(st.Key + " = " + v + "\n")
		n++
	}
	if n == 0 {
		return nil
	}
	return b.Bytes()
}
