package npmreg

import (
	"bufio"
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// Settings is what claude-update takes from npm's configuration besides the
// registry: the CAs (cafile, ca), strict-ssl, the proxy (https-proxy,
// proxy, noproxy) and the per-registry _authToken. Each comes from the
// first place that sets it, in npm's order: the environment (npm_config_*),
// the user npmrc, the global npmrc.
type Settings struct {
	Registry string // ends with /
	From     string // where Registry came from

	// RootCAs, if not nil, are the only CAs trusted, as npm does with ca.
	RootCAs *x509.CertPool
	CAFrom  string
	// Insecure is strict-ssl=false.
	Insecure     bool
	InsecureFrom string
	// Proxy is https-proxy, else proxy; nil leaves the environment's
	// HTTPS_PROXY in charge, as npm does.
	Proxy     *url.URL
	ProxyFrom string
	NoProxy   []string

	tokens map[string]string // "//host/path/" -> token
}

// rcEntry is one key = value line of an npmrc.
type rcEntry struct{ key, value string }

// Entry is one top-level key = value line of an npmrc, with ${VAR}
// replaced.
type Entry struct{ Key, Value string }

// Entries parses npmrc text into its top-level entries, in order (see
// ParseNpmrc).
func Entries(data []byte, getenv func(string) string) []Entry {
	var out []Entry
	for _, e := range parseEntries(data, getenv) {
		out = append(out, Entry{e.key, e.value})
	}
	return out
}

// parseEntries parses npmrc text into its entries, in order (see
// ParseNpmrc). The lines after a [section] header are the section's, which
// npm reads as no setting: they are left out.
func parseEntries(data []byte, getenv func(string) string) []rcEntry {
	var out []rcEntry
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	section := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line != "" && line[0] == '[' && strings.HasSuffix(line, "]") {
			section = true
		}
		if section || line == "" || line[0] == ';' || line[0] == '#' || line[0] == '[' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = v[1 : len(v)-1]
		}
		out = append(out, rcEntry{k, expand(v, getenv)})
	}
	return out
}

// layer is one place npm reads configuration from.
type layer struct {
	from   string
	env    bool // the environment, not a file
	values map[string]string
	cas    []string // ca[] entries
}

func (c Config) getenv() func(string) string {
	if c.Getenv == nil {
		return func(string) string { return "" }
	}
	return c.Getenv
}

// files returns the user and global npmrc paths, in npm's order.
func (c Config) files() []string {
	getenv := c.getenv()
	var files []string
	if f := getenv("NPM_CONFIG_USERCONFIG"); f != "" {
		files = append(files, f)
	} else if f := getenv("npm_config_userconfig"); f != "" {
		files = append(files, f)
	} else if c.Home != "" {
		files = append(files, filepath.Join(c.Home, ".npmrc"))
	}
	if f := getenv("NPM_CONFIG_GLOBALCONFIG"); f != "" {
		files = append(files, f)
	} else if f := getenv("npm_config_globalconfig"); f != "" {
		files = append(files, f)
	} else {
		if p := c.globalPrefix(); p != "" {
			files = append(files, filepath.Join(p, "etc", "npmrc"))
		}
		files = append(files, "/etc/npmrc")
	}
	return files
}

// settingKeys are the keys read from the environment as npm_config_<key>
// (dashes as underscores, either case).
var settingKeys = []string{"cafile", "ca", "strict-ssl", "https-proxy", "proxy", "noproxy"}

func (c Config) layers() ([]layer, error) {
	getenv := c.getenv()
	env := layer{from: "the environment", env: true, values: map[string]string{}}
	for _, k := range settingKeys {
		name := strings.ReplaceAll(k, "-", "_")
		for _, n := range []string{"npm_config_" + name, "NPM_CONFIG_" + strings.ToUpper(name)} {
			if v := getenv(n); v != "" {
				env.values[k] = v
				break
			}
		}
	}
	layers := []layer{env}
	for _, f := range c.files() {
		data, err := c.read("npmrc", f)
		if errors.Is(err, errSkipped) || errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read npm config: %w", err)
		}
		l := layer{from: f, values: map[string]string{}}
		for _, e := range parseEntries(data, getenv) {
			if e.key == "ca[]" {
				l.cas = append(l.cas, e.value)
				continue
			}
			l.values[e.key] = e.value
		}
		layers = append(layers, l)
	}
	return layers, nil
}

// errSkipped is read's answer for a file that Trust refused.
var errSkipped = errors.New("skipped")

// read reads file p, what it is for messages, if Trust lets it. A file
// that does not exist is not vetted: there is nothing to read.
func (c Config) read(what, p string) ([]byte, error) {
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return os.ReadFile(p) // its own "open ...: no such file" error
	}
	if c.Trust != nil {
		if err := c.Trust(what, p); err != nil {
			c.logf("%v; skipped", err)
			return nil, errSkipped
		}
	}
	return os.ReadFile(p)
}

// Load reads the settings; registry, if not "", is the registry given on
// the command line.
func Load(c Config, registry string) (*Settings, error) {
	s := &Settings{tokens: map[string]string{}}
	layers, err := c.layers()
	if err != nil {
		return nil, err
	}
	if registry != "" {
		s.Registry, err = CheckURL(registry)
		s.From = "--registry"
	} else {
		s.Registry, s.From, err = c.registry(layers)
	}
	if err != nil {
		return nil, err
	}
	get := func(key string) (string, string, bool) {
		for _, l := range layers {
			if v, ok := l.values[key]; ok {
				return v, l.from, true
			}
		}
		return "", "", false
	}
	// cafile or ca: the first layer that sets either; in it cafile wins.
	for _, l := range layers {
		var pem []byte
		if f, ok := l.values["cafile"]; ok && f != "" {
			if pem, err = c.read("cafile", f); errors.Is(err, errSkipped) {
				continue
			} else if err != nil {
				return nil, fmt.Errorf("cafile from %s: %w", l.from, err)
			}
			s.CAFrom = "cafile " + f + " from " + l.from
		} else if v, ok := l.values["ca"]; ok && v != "" && v != "null" {
			pem = []byte(strings.ReplaceAll(v, `\n`, "\n"))
			s.CAFrom = "ca from " + l.from
		} else if len(l.cas) > 0 {
			for _, v := range l.cas {
				pem = append(pem, strings.ReplaceAll(v, `\n`, "\n")+"\n"...)
			}
			s.CAFrom = "ca[] from " + l.from
		} else {
			continue
		}
		s.RootCAs = x509.NewCertPool()
		if !s.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s holds no PEM certificate", s.CAFrom)
		}
		break
	}
	if v, from, ok := get("strict-ssl"); ok && strings.EqualFold(strings.TrimSpace(v), "false") {
		s.Insecure, s.InsecureFrom = true, from
	}
	for _, k := range []string{"https-proxy", "proxy"} {
		v, from, ok := get(k)
		if !ok || v == "" || v == "null" || v == "false" {
			continue
		}
		if !strings.Contains(v, "://") {
			v = "http://" + v
		}
		u, err := url.Parse(v)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("%s %q from %s is not an http or https proxy URL", k, v, from)
		}
		s.Proxy, s.ProxyFrom = u, k+" from "+from
		break
	}
	noproxy, _, ok := get("noproxy")
	if !ok {
		noproxy = firstEnv(c.getenv(), "NO_PROXY", "no_proxy")
	}
	for _, d := range strings.Split(noproxy, ",") {
		if d = strings.TrimSpace(d); d != "" {
			s.NoProxy = append(s.NoProxy, d)
		}
	}
	// Tokens: the first layer that has one for a given registry path.
	for i := len(layers) - 1; i >= 0; i-- {
		for k, v := range layers[i].values {
			if dart, ok := strings.CutSuffix(k, ":_authToken"); ok && strings.HasPrefix(dart, "//") && v != "" {
				if !strings.HasSuffix(dart, "/") {
					dart += "/"
				}
				s.tokens[dart] = v
			}
		}
	}
	return s, nil
}

func firstEnv(getenv func(string) string, names ...string) string {
	for _, n := range names {
		if v := getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// Authorization returns "Bearer TOKEN" for a URL under a registry path
// that has an _authToken, as npm matches them: //host[:port]/path/, then
// each shorter path down to //host/. The path is first normalised as a
// server may: percent-encoding decoded (%2e is a dot, %2f and %5c
// separators), backslashes taken as slashes and dot segments resolved, so
// that /npm/%2e%2e/x is matched as /x. Other URLs get "".
func (s *Settings) Authorization(u *url.URL) string {
	if u.Scheme != "https" || len(s.tokens) == 0 {
		return ""
	}
	p, ok := normalPath(u)
	if !ok {
		return ""
	}
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		p = p[:i+1]
	} else {
		p = "/"
	}
	for {
		if t, ok := s.tokens["//"+u.Host+p]; ok {
			return "Bearer " + t
		}
		if p == "/" {
			return ""
		}
		p = p[:strings.LastIndexByte(strings.TrimSuffix(p, "/"), '/')+1]
	}
}

// normalPath returns u's path decoded and with dot segments resolved
// (RFC 3986 5.2.4); ok is false if it does not decode.
func normalPath(u *url.URL) (string, bool) {
	p, err := url.PathUnescape(u.EscapedPath())
	if err != nil {
		return "", false
	}
	p = strings.ReplaceAll(p, `\`, "/")
	var out []string
	segs := strings.Split(p, "/")
	for i, seg := range segs {
		last := i == len(segs)-1
		switch seg {
		case ".":
			if last {
				out = append(out, "")
			}
		case "..":
			if len(out) > 1 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, seg)
		}
	}
	p = strings.Join(out, "/")
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return p, true
}

// ProxyFunc returns the proxy function for https requests, or nil to leave
// the environment's proxies in charge.
func (s *Settings) ProxyFunc() func(*http.Request) (*url.URL, error) {
	if s.Proxy == nil {
		return nil
	}
	return func(req *http.Request) (*url.URL, error) {
		if noProxy(s.NoProxy, req.URL) {
			return nil, nil
		}
		return s.Proxy, nil
	}
}

// noProxy reports whether u's host matches an entry of list: "*", the host
// itself, or a domain it is in (with or without a leading dot), optionally
// with the port.
func noProxy(list []string, u *url.URL) bool {
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	for _, e := range list {
		e = strings.ToLower(e)
		if e == "*" {
			return true
		}
		if h, p, err := net.SplitHostPort(e); err == nil {
			if p != port {
				continue
			}
			e = h
		}
		e = strings.TrimPrefix(e, "*")
		e = strings.TrimPrefix(e, ".")
		if host == e || strings.HasSuffix(host, "."+e) {
			return true
		}
	}
	return false
}
