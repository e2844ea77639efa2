package toolchain

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"net/url"
	"path/filepath"
	"sort"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/npmreg"
)

// npm's settings that reach a registry from this machine. Nothing else of
// an npmrc is carried: not _auth, _authToken, _password, username, email,
// certfile or keyfile (client keys), nor any per-registry //host/:key line.
var npmURLKeys = []string{"registry", "proxy", "https-proxy"}

// scopedRegistry reports whether k is a scope's registry, @scope:registry,
// with an npm scope name, so that the key can hold nothing else: @, a
// letter or digit, then at most 213 of letters, digits and ._~-. (A
// function, not a regexp: compiling {0,213} took a millisecond of every
// start.)
func scopedRegistry(k string) bool {
	scope, ok := strings.CutSuffix(k, ":registry")
	if !ok || len(scope) < 2 || len(scope) > 215 || scope[0] != '@' || !alnum(scope[1]) {
		return false
	}
	for i := 2; i < len(scope); i++ {
		if c := scope[i]; !alnum(c) && !strings.ContainsRune("._~-", rune(c)) {
			return false
		}
	}
	return true
}

// alnum reports whether c is an ASCII letter or digit.
func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// unsetVar stands in for a ${VAR} the sandbox does not get: a value that
// holds it is not plain, and is left out.
const unsetVar = "\x00"

// npm collects the npm settings from the user npmrc and the global ones,
// in npm's order: the first file that sets a key wins (the environment's
// npm_config_* reach the sandbox as they are, and win there as here).
func (s *settingsBuilder) npm() {
	files := []string{filepath.Join(s.in.Home, ".npmrc")}
	if f := s.getenvAny("NPM_CONFIG_USERCONFIG", "npm_config_userconfig"); f != "" {
		files[0] = f
	}
	if f := s.getenvAny("NPM_CONFIG_GLOBALCONFIG", "npm_config_globalconfig"); f != "" {
		files = append(files, f)
	} else {
		for _, p := range s.in.NpmPrefixes {
			files = append(files, filepath.Join(p, "etc", "npmrc"))
		}
		files = append(files, "/usr/local/etc/npmrc", "/etc/npmrc")
	}
	// ${VAR} in a value is replaced on the host with what the sandbox's
	// environment holds, so that nothing of the launcher's own
	// environment that the sandbox does not get is written; a variable
	// the sandbox does not get leaves the value out.
	getenv := func(k string) string {
		if v := s.getenv(k); v != "" {
			return v
		}
		return unsetVar
	}
	got := map[string]bool{}
	for _, f := range files {
		b := s.read(f)
		if b == nil {
			continue
		}
		vals := map[string]string{}
		var cas []string
		var left []string
		for _, e := range npmreg.Entries(b, getenv) {
			switch k := e.Key; {
			case k == "ca[]": // one more, as npm's ini reads it
				cas = append(cas, e.Value)
			case k == "ca":
				cas = []string{e.Value}
			case contains(npmURLKeys, k), scopedRegistry(k), k == "cafile", k == "strict-ssl", k == "noproxy":
				vals[k] = e.Value
			default:
				left = append(left, k)
			}
		}
		if len(cas) > 0 {
			vals["ca"] = ""
		}
		keys := make([]string, 0, len(vals))
		for k := range vals {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var carried []string
		for _, k := range keys {
			if got[k] {
				continue
			}
			got[k] = true
			if why := s.npmSetting(f, k, vals[k], cas); why != "" {
				s.note("%s: npm %s left out: %s", f, k, why)
				continue
			}
			carried = append(carried, k)
		}
		if len(carried) > 0 {
			s.note("%s: npm settings carried: %s", f, strings.Join(carried, " "))
		}
		if len(left) > 0 {
			sort.Strings(left)
			s.note("%s: npm settings left out: %s", f, strings.Join(dedup(left), " "))
		}
	}
}

// npmSetting adds one setting, or says why not.
func (s *settingsBuilder) npmSetting(from, k, v string, cas []string) string {
	add := func(v, ca string) { s.out.Npmrc = append(s.out.Npmrc, Setting{Key: k, Value: v, CA: ca}) }
	if k == "ca" {
		var certs []string
		for _, c := range cas {
			// npm's ini reads "\n" in a quoted value as a line break;
			// the parser keeps it as two characters.
			data := []byte(strings.ReplaceAll(c, `\n`, "\n"))
			if err := CertsOnly(data); err != nil {
				return err.Error()
			}
			for len(data) > 0 {
				var b *pem.Block
				if b, data = pem.Decode(data); b == nil {
					break
				}
				// Written afresh from the certificate's bytes: nothing of
				// the original text comes along.
				q, _ := json.Marshal(strings.TrimSuffix(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: b.Bytes})), "\n"))
				certs = append(certs, string(q))
			}
		}
		for _, c := range certs {
			s.out.Npmrc = append(s.out.Npmrc, Setting{Key: "ca[]", Value: c})
		}
		return ""
	}
	if why := notPlain(v); why != "" {
		return why
	}
	switch {
	case k == "strict-ssl":
		if v != "true" && v != "false" {
			return "not true or false"
		}
	case k == "noproxy":
	case k == "cafile":
		if !s.caFile(k, v, from) {
			return "the file is not shown"
		}
		if s.getenv("NODE_EXTRA_CA_CERTS") == "" {
			s.env("NODE_EXTRA_CA_CERTS", v)
		}
		add(v, v)
		return ""
	default: // a URL
		u, why := plainURL(v)
		if why != "" {
			return why
		}
		v = u
	}
	add(v, "")
	return ""
}

// plainURL returns an http(s) URL without user:password@, or says why it
// is left out: a query may hold a token.
func plainURL(raw string) (string, string) {
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw // npm's proxy may lack the scheme
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "" || u.Opaque != "":
		return "", "not a URL"
	case u.Scheme != "http" && u.Scheme != "https":
		return "", "not an http or https URL"
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "", "the URL has a query or a fragment, which may hold a credential"
	}
	u.User = nil
	return u.String(), ""
}

// notPlain says why a value read from a configuration file is not written
// into a generated one, or "": it holds a line break or another control
// character, a quote, a backslash, a comment sign (; #), a ${VAR} the
// sandbox does not get or one left unreplaced, or is empty. What is left
// reads back the same in npm's ini, in TOML strings and in pip's ini.
func notPlain(v string) string {
	switch {
	case v == "":
		return "empty"
	case strings.Contains(v, unsetVar):
		return "it names a variable the sandbox does not get"
	case strings.Contains(v, "${"):
		return "it holds ${"
	case strings.ContainsAny(v, "\"'\\;#"):
		return "it holds a quote, a backslash or a comment sign"
	case v != strings.TrimSpace(v):
		return "it has spaces around it"
	}
	for _, c := range v {
		if c < 0x20 || c >= 0x7f && c <= 0x9f { // C0, DEL and C1
			return "it holds a control character"
		}
	}
	return ""
}

// Npmrc writes the generated npmrc: settings whose CA file is not shown
// are left out.
func Npmrc(set []Setting, shown func(string) bool) []byte {
	var b bytes.Buffer
	b.WriteString("; Generated by claude for the sandbox from your npm configuration, without\n; credentials. Read-only: set npm_config_* variables or use a project .npmrc.\n")
	n := 0
	for _, st := range set {
		if st.CA != "" && !shown(st.CA) || !oneLine(st.Key, st.Value) {
			continue
		}
		b.WriteString(st.Key + "=" + st.Value + "\n")
		n++
	}
	if n == 0 {
		return nil
	}
	return b.Bytes()
}

// oneLine is the last guard of a generated file: no setting spans lines.
func oneLine(ss ...string) bool {
	for _, s := range ss {
		if strings.ContainsAny(s, "\n\r\x00") {
			return false
		}
	}
	return true
}

func (s *settingsBuilder) getenvAny(names ...string) string {
	for _, n := range names {
		if v := s.getenv(n); v != "" {
			return v
		}
	}
	return ""
}

func dedup(sorted []string) []string {
	out := sorted[:0]
	for i, x := range sorted {
		if i == 0 || x != sorted[i-1] {
			out = append(out, x)
		}
	}
	return out
}
