package npmreg

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAuthorization(t *testing.T) {
	s := &Settings{tokens: map[string]string{
		"//reg.example/npm/":     "A",
		"//reg.example:8443/":    "B",
		"//other.example/a/b/c/": "C",
	}}
	tests := []struct{ url, want string }{
		{"https://reg.example/npm/@anthropic-ai%2fclaude-code", "Bearer A"},
		{"https://reg.example/npm/@anthropic-ai/claude-code-linux-x64/-/x.tgz", "Bearer A"},
		{"https://reg.example/cdn/x.tgz", ""},
		{"https://reg.example/", ""},
		{"https://reg.example:8443/deep/path/x", "Bearer B"},
		{"https://other.example/a/b/c/d/x", "Bearer C"},
		{"https://other.example/a/b/x", ""},
		{"http://reg.example/npm/x", ""},
		{"https://evil.example/npm/x", ""},
		// What a server normalises outside the scope gets no token.
		{"https://reg.example/npm/../x", ""},
		{"https://reg.example/npm/%2e%2e/x", ""},
		{"https://reg.example/npm/%2E%2e/x", ""},
		{"https://reg.example/npm/.%2e/x", ""},
		{"https://reg.example/npm/..%2fx", ""},
		{"https://reg.example/npm/..%5cx", ""},
		{"https://reg.example/npm/a/../../x", ""},
		// Inside it, after normalisation, it does.
		{"https://reg.example/npm/a/../x", "Bearer A"},
		{"https://reg.example/npm/./x", "Bearer A"},
		{"https://reg.example/x/../npm/y", "Bearer A"},
	}
	for _, tt := range tests {
		u, _ := url.Parse(tt.url)
		if got := s.Authorization(u); got != tt.want {
			t.Errorf("Authorization(%s) = %q, want %q", tt.url, got, tt.want)
		}
	}
}

func TestNoProxy(t *testing.T) {
	tests := []struct {
		list []string
		url  string
		want bool
	}{
		{[]string{"*"}, "https://a.example/", true},
		{[]string{"example.org"}, "https://example.org/", true},
		{[]string{"example.org"}, "https://reg.example.org/", true},
		{[]string{".example.org"}, "https://reg.example.org/", true},
		{[]string{"example.org"}, "https://badexample.org/", false},
		{[]string{"127.0.0.1:8443"}, "https://127.0.0.1:8443/", true},
		{[]string{"127.0.0.1:8443"}, "https://127.0.0.1:9443/", false},
		{nil, "https://a.example/", false},
	}
	for _, tt := range tests {
		u, _ := url.Parse(tt.url)
		if got := noProxy(tt.list, u); got != tt.want {
			t.Errorf("noProxy(%q, %s) = %v, want %v", tt.list, tt.url, got, tt.want)
		}
	}
}

func TestLoadLayers(t *testing.T) {
	dir := t.TempDir()
	user := filepath.Join(dir, "user")
	global := filepath.Join(dir, "global")
	os.WriteFile(user, []byte("registry=https://r.example/\n//r.example/:_authToken=user\nhttps-proxy=proxy.example:3128\n"), 0o644)
	os.WriteFile(global, []byte("//r.example/:_authToken=global\n//g.example/:_authToken=g\nstrict-ssl=false\nnoproxy=a.example\n"), 0o644)
	env := map[string]string{"NPM_CONFIG_USERCONFIG": user, "NPM_CONFIG_GLOBALCONFIG": global, "npm_config_noproxy": "b.example"}
	s, err := Load(Config{Getenv: func(k string) string { return env[k] }}, "")
	if err != nil {
		t.Fatal(err)
	}
	if s.Registry != "https://r.example/" || s.From != user {
		t.Errorf("registry %s from %s", s.Registry, s.From)
	}
	if s.tokens["//r.example/"] != "user" || s.tokens["//g.example/"] != "g" {
		t.Errorf("tokens %v: the user npmrc wins, the global one adds", s.tokens)
	}
	if !s.Insecure || s.InsecureFrom != global {
		t.Errorf("strict-ssl: %v from %s", s.Insecure, s.InsecureFrom)
	}
	if s.Proxy == nil || s.Proxy.String() != "http://proxy.example:3128" || s.ProxyFrom != "https-proxy from "+user {
		t.Errorf("proxy %v from %s", s.Proxy, s.ProxyFrom)
	}
	if len(s.NoProxy) != 1 || s.NoProxy[0] != "b.example" {
		t.Errorf("noproxy %q: the environment wins", s.NoProxy)
	}
	env["npm_config_https_proxy"] = "socks5://x"
	if _, err := Load(Config{Getenv: func(k string) string { return env[k] }}, ""); err == nil || err.Error() != `https-proxy "socks5://x" from the environment is not an http or https proxy URL` {
		t.Errorf("socks proxy: %v", err)
	}
}

// FuzzAuthorization: a token for //reg.example/npm/ goes only to URLs whose
// path, once normalised, is under /npm/.
func FuzzAuthorization(f *testing.F) {
	for _, p := range []string{"/npm/x", "/npm/../x", "/npm/%2e%2e/x", "/npm/..%2fx", "/x/../npm/y", "/npm/./a/../../b"} {
		f.Add(p)
	}
	s := &Settings{tokens: map[string]string{"//reg.example/npm/": "A"}}
	f.Fuzz(func(t *testing.T, p string) {
		u, err := url.Parse("https://reg.example" + p)
		if err != nil || u.Host != "reg.example" {
			return
		}
		got := s.Authorization(u)
		np, ok := normalPath(u)
		under := ok && strings.HasPrefix(np, "/npm/")
		if (got != "") != under {
			t.Fatalf("Authorization(%s) = %q, normalised path %q (%v)", u, got, np, ok)
		}
		if strings.Contains(np, "/../") || strings.HasSuffix(np, "/..") || strings.Contains(np, "/./") {
			t.Fatalf("normalPath(%s) = %q keeps a dot segment", u, np)
		}
	})
}
