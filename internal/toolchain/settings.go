package toolchain

import (
	"bufio"
	"bytes"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
)

// Files reads the user's configuration files for Settings: a regular file
// of at most a few MiB, not followed through a symbolic link, or an error.
type Files interface {
	ReadFile(path string) ([]byte, error)
}

// SettingsInput is what Settings works from.
type SettingsInput struct {
	Home string
	// Getenv reads the launcher's environment.
	Getenv func(string) string
	// NpmPrefixes are the install prefixes of the npm toolchains found
	// (each has its global npmrc in etc/npmrc).
	NpmPrefixes []string
	// CargoHome is the launcher's CARGO_HOME ("" for ~/.cargo).
	CargoHome string
	// Writable are the host paths the sandbox can write: a configuration
	// file there is the agent's, not the user's, and is not read; a file
	// it names there is not shown.
	Writable []string
}

// Settings are the toolchains' registry settings carried into the
// sandbox, without credentials.
type Settings struct {
	// Env are NAME=VALUE pairs set inside.
	Env []string
	// Files are host files (CA bundles) to show read-only at their paths.
	Files []string
	// Npmrc are the settings of the npmrc generated for inside (Npmrc
	// writes it); Cargo those of the generated cargo configuration
	// (CargoConfig).
	Npmrc []Setting
	Cargo []Setting
	// Notes say where each setting came from and what was left out.
	Notes []string
}

// Setting is one line of a generated configuration file. Key and Value
// are checked when read: plain text, no line break, nothing a credential
// could hide in that the rules of each tool let through.
type Setting struct {
	// Section is the TOML table of a cargo setting.
	Section string
	Key     string
	// Value is written as it is (npm), or as a TOML string unless Bare
	// (cargo's booleans).
	Value string
	Bare  bool
	// CA is the CA file the setting names: the setting is written only
	// if the launcher shows the file inside.
	CA string
}

// pipKeys are pip's, likewise; client certificates (client-cert) are
// credentials and stay out.
var pipKeys = map[string]string{
	"index-url": "PIP_INDEX_URL", "extra-index-url": "PIP_EXTRA_INDEX_URL",
	"cert": "PIP_CERT", "trusted-host": "PIP_TRUSTED_HOST", "proxy": "PIP_PROXY",
}

// goKeys are the go env settings carried from the user's go env file.
var goKeys = []string{"GOPROXY", "GONOPROXY", "GOPRIVATE", "GONOSUMDB", "GONOSUMCHECK", "GOSUMDB", "GOINSECURE", "GOFLAGS", "GOTOOLCHAIN"}

// ReadSettings collects the settings.
func ReadSettings(f Files, in SettingsInput) Settings {
	s := &settingsBuilder{f: f, in: in, set: map[string]bool{}}
	s.npm()
	s.cargo()
	s.pip()
	s.goEnv()
	return s.out
}

type settingsBuilder struct {
	f   Files
	in  SettingsInput
	out Settings
	set map[string]bool
}

func (s *settingsBuilder) note(format string, args ...string) {
	for _, a := range args {
		format = strings.Replace(format, "%s", a, 1)
	}
	s.out.Notes = append(s.out.Notes, format)
}

func (s *settingsBuilder) env(k, v string) {
	if s.set[k] {
		return
	}
	s.set[k] = true
	s.out.Env = append(s.out.Env, k+"="+v)
}

// read reads a configuration file of the user's, or returns nil.
func (s *settingsBuilder) read(p string) []byte {
	b, _ := s.readOr(p)
	return b
}

// readOr is read, and tells whether the file is there (read or not).
func (s *settingsBuilder) readOr(p string) (b []byte, there bool) {
	if w := inAny(p, s.in.Writable); w != "" {
		s.note("%s: not read: it lies in %s, which the sandbox can write", p, w)
		return nil, true
	}
	b, err := s.f.ReadFile(p)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.note("%s: not read: %s", p, err.Error())
			return nil, true
		}
		return nil, false
	}
	return b, true
}

// caFile shows a CA file named by a setting, if it may be shown.
func (s *settingsBuilder) caFile(key, p, from string) bool {
	switch {
	case !filepath.IsAbs(p):
		s.note("%s: %s is not an absolute path: left out", from, key)
		return false
	case inAny(p, s.in.Writable) != "":
		s.note("%s: %s %s lies where the sandbox can write: left out", from, key, p)
		return false
	case Secret(s.in.Home, p) != "":
		s.note("%s: %s %s is a place where credentials are kept: left out", from, key, p)
		return false
	}
	s.out.Files = append(s.out.Files, p)
	return true
}

// pip reads its configuration files as pip does: the global ones, the
// user's, then PIP_CONFIG_FILE (alone when it is /dev/null); a later file
// wins, and in each the [install] section over [global].
func (s *settingsBuilder) pip() {
	files := []string{"/etc/xdg/pip/pip.conf", "/etc/pip.conf", filepath.Join(s.in.Home, ".pip", "pip.conf"), s.xdg("pip", "pip.conf")}
	if f := s.getenv("PIP_CONFIG_FILE"); f == "/dev/null" {
		files = nil
	} else if f != "" {
		files = append(files, f)
	}
	vals := map[string]string{}
	from := map[string]string{}
	for _, f := range files {
		b := s.read(f)
		if b == nil {
			continue
		}
		section := ""
		for _, e := range iniLines(b) {
			if e[0] == "[" {
				section = e[1]
				continue
			}
			if section != "global" && section != "install" {
				continue
			}
			if _, ok := pipKeys[e[0]]; ok {
				vals[section+"."+e[0]], from[section+"."+e[0]] = e[1], f
			}
		}
	}
	keys := make([]string, 0, len(pipKeys))
	for k := range pipKeys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		sk := "install." + k
		if _, ok := vals[sk]; !ok {
			sk = "global." + k
		}
		v, ok := vals[sk]
		name := pipKeys[k]
		if !ok || s.getenv(name) != "" {
			continue
		}
		// Several values (one a line, or on one line) are one a word
		// in the variable, as pip reads it.
		words := strings.Fields(v)
		why := ""
		if len(words) == 0 {
			why = "empty"
		}
		for i, w := range words {
			if why = notPlain(w); why != "" {
				break
			}
			switch k {
			case "index-url", "extra-index-url", "proxy":
				words[i], why = plainURL(w)
			case "cert":
				if len(words) != 1 || !s.caFile(k, w, from[sk]) {
					why = "the file is not shown"
				}
			}
			if why != "" {
				break
			}
		}
		if why != "" {
			s.note("%s: pip %s left out: %s", from[sk], k, why)
			continue
		}
		s.env(name, strings.Join(words, " "))
		s.note("%s: pip %s carried", from[sk], k)
	}
}

func (s *settingsBuilder) goEnv() {
	f := s.getenv("GOENV")
	if f == "" {
		f = s.xdg("go", "env")
	}
	if f == "off" {
		return
	}
	b := s.read(f)
	if b == nil {
		return
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok || !contains(goKeys, k) || s.getenv(k) != "" {
			continue
		}
		if k == "GOPROXY" || k == "GONOSUMDB" || k == "GOSUMDB" {
			var why string
			if v, why = goURLs(v); why != "" {
				s.note("%s: go %s left out: %s", f, k, why)
				continue
			}
		}
		s.env(k, v)
		s.note("%s: go %s carried", f, k)
	}
}

func (s *settingsBuilder) getenv(k string) string {
	if s.in.Getenv == nil {
		return ""
	}
	return s.in.Getenv(k)
}

func (s *settingsBuilder) xdg(parts ...string) string {
	base := s.getenv("XDG_CONFIG_HOME")
	if !filepath.IsAbs(base) {
		base = filepath.Join(s.in.Home, ".config")
	}
	return filepath.Join(append([]string{base}, parts...)...)
}

// iniLines returns the key = value (or key: value) lines of a pip.conf,
// as Python's configparser reads them, and sections as {"[", name}: keys
// in lower case with _ as -, as pip takes them; an indented line goes on
// the value before it, after a line break; # and ; start comment lines.
func iniLines(b []byte) [][2]string {
	var out [][2]string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	value := false // the last line was a key's, or continued one
	for sc.Scan() {
		raw := strings.TrimRight(sc.Text(), " \t\r")
		line := strings.TrimSpace(raw)
		switch {
		case line == "":
			continue
		case line[0] == ';' || line[0] == '#':
			continue
		case value && raw[0] != line[0]: // indented: a continuation
			out[len(out)-1][1] += "\n" + line
			continue
		case line[0] == '[' && strings.HasSuffix(line, "]"):
			out = append(out, [2]string{"[", strings.TrimSpace(line[1 : len(line)-1])})
			value = false
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i < 0 {
			value = false
			continue
		}
		k := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(line[:i])), "_", "-")
		out = append(out, [2]string{k, strings.TrimSpace(line[i+1:])})
		value = true
	}
	return out
}

// goURLs drops user:password@ from each URL of a GOPROXY list (entries
// between , and |) or a GOSUMDB (name+key URL), or says why the value is
// left out: a URL with a query or a fragment, an @ elsewhere.
func goURLs(v string) (string, string) {
	var b strings.Builder
	for v != "" {
		i := strings.IndexAny(v, ",| ")
		if i < 0 {
			i = len(v)
		}
		part := v[:i]
		switch {
		case strings.Contains(part, "://"):
			u, why := plainURL(part)
			if why != "" {
				return "", why
			}
			part = u
		case strings.Contains(part, "@"):
			return "", "it holds @ outside a URL"
		}
		b.WriteString(part)
		if i < len(v) {
			b.WriteByte(v[i])
			i++
		}
		v = v[i:]
	}
	return b.String(), ""
}

func inAny(p string, dirs []string) string {
	for _, d := range dirs {
		if p == d || under(p, d) {
			return d
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// CertsOnly checks that data holds certificates and nothing else (PEM
// CERTIFICATE blocks, blank lines and # comments between them): a CA file
// a setting names is shown inside only then, so that a setting cannot show
// any other file of the host.
func CertsOnly(data []byte) error {
	n := 0
	for {
		i := bytes.Index(data, []byte("-----BEGIN "))
		if i < 0 {
			break
		}
		if err := commentsOnly(data[:i]); err != nil {
			return err
		}
		block, rest := pem.Decode(data[i:])
		if block == nil {
			return errors.New("it holds a broken PEM block")
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("it holds a %s block, not only certificates", block.Type)
		}
		if len(block.Headers) > 0 {
			return errors.New("a certificate block has headers")
		}
		n++
		data = rest
	}
	if n == 0 {
		return errors.New("it holds no PEM certificate")
	}
	return commentsOnly(data)
}

func commentsOnly(b []byte) error {
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			return errors.New("it holds text besides certificates")
		}
	}
	return nil
}
