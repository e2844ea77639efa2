package claudeupdate

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// connectProxy is an HTTP proxy that tunnels CONNECT requests and records
// the hosts asked for. It connects to the host asked for, or to where route
// sends it when route is not nil.
func connectProxy(t *testing.T, route func(host string) string) (string, func() []string) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		mu.Lock()
		seen = append(seen, r.Host)
		mu.Unlock()
		target := r.Host
		if route != nil {
			target = route(r.Host)
		}
		up, err := net.Dial("tcp", target)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			up.Close()
			return
		}
		conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
		go func() { io.Copy(up, buf); up.Close() }()
		io.Copy(conn, up)
		conn.Close()
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// npmFixture serves 2.1.100 on the npm side, with the registry in
// ~/.npmrc followed by extra, and without SSL_CERT_FILE: what TLS trusts
// must come from the npm configuration.
func npmFixture(t *testing.T, extra string) *fixture {
	f := newFixture(t)
	tb := f.npmTarball("2.1.100", fakeAgent("2.1.100", agentSize))
	f.npmPublish(map[string]string{"latest": "2.1.100"}, npmVersion{version: "2.1.100", tarball: tb})
	delete(f.env, "SSL_CERT_FILE")
	rc := "registry=" + f.registry + "\n" + strings.ReplaceAll(extra, "CAFILE", f.certFile)
	if err := os.WriteFile(filepath.Join(f.home, ".npmrc"), []byte(rc), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestNpmTLSSettings(t *testing.T) {
	tests := []struct {
		name, npmrc string
		globalrc    string // written as the global npmrc
		env         map[string]string
		err         string // with REGISTRY for the registry URL
		warn        string
	}{
		{name: "no CA: refused", err: "GET REGISTRY@anthropic-ai%2fclaude-code: tls: failed to verify certificate: x509: certificate signed by unknown authority"},
		{name: "cafile", npmrc: "cafile=CAFILE\n"},
		{name: "cafile in the global npmrc", globalrc: "cafile=CAFILE\n"},
		{name: "cafile from the environment", env: map[string]string{"npm_config_cafile": "CAFILE"}},
		{name: "ca inline", npmrc: "ca=\"INLINE\"\n"},
		{name: "ca[] list", npmrc: "ca[]=\"INLINE\"\n"},
		{name: "user cafile wins over global", npmrc: "cafile=CAFILE\n", globalrc: "cafile=/etc/ssl/certs/ca-certificates.crt\n"},
		{name: "cafile replaces the system roots", npmrc: "cafile=/etc/ssl/certs/ca-certificates.crt\n", env: map[string]string{"SSL_CERT_FILE": "CAFILE"},
			err: "GET REGISTRY@anthropic-ai%2fclaude-code: tls: failed to verify certificate: x509: certificate signed by unknown authority"},
		{name: "strict-ssl=false", npmrc: "strict-ssl=false\n", warn: "claude-update: strict-ssl=false from HOME/.npmrc: the registry's certificate is not checked, so neither is the integrity hash it serves\n"},
		{name: "bad cafile", npmrc: "cafile=/nonexistent/ca.pem\n", err: "cafile from HOME/.npmrc: open /nonexistent/ca.pem: no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := npmFixture(t, "")
			pem, _ := os.ReadFile(f.certFile)
			inline := strings.ReplaceAll(strings.TrimSpace(string(pem)), "\n", `\n`)
			sub := func(s string) string {
				s = strings.ReplaceAll(s, "CAFILE", f.certFile)
				s = strings.ReplaceAll(s, "INLINE", inline)
				s = strings.ReplaceAll(s, "REGISTRY", f.registry)
				return strings.ReplaceAll(s, "HOME", f.home)
			}
			os.WriteFile(filepath.Join(f.home, ".npmrc"), []byte("registry="+f.registry+"\n"+sub(tt.npmrc)), 0o644)
			if tt.globalrc != "" {
				os.WriteFile(f.env["NPM_CONFIG_GLOBALCONFIG"], []byte(sub(tt.globalrc)), 0o644)
			}
			for k, v := range tt.env {
				f.env[k] = sub(v)
			}
			var stderr strings.Builder
			out, err := f.runErrTo(&stderr, "--source", "npm")
			if tt.err != "" {
				if err == nil || err.Error() != sub(tt.err) {
					t.Fatalf("got %v, want %q", err, sub(tt.err))
				}
				return
			}
			if err != nil {
				t.Fatalf("claude-update --source npm: %v\n%s", err, out)
			}
			if f.current() != "claude.2.1.100" {
				t.Errorf("claude -> %s", f.current())
			}
			if got := stderr.String(); got != sub(tt.warn) {
				t.Errorf("stderr = %q, want %q", got, sub(tt.warn))
			}
		})
	}
}

func TestNpmProxySettings(t *testing.T) {
	proxy, seen := connectProxy(t, nil)
	tests := []struct {
		name, npmrc string
		env         map[string]string
		proxied     bool
	}{
		{name: "https-proxy", npmrc: "https-proxy=PROXY\n", proxied: true},
		{name: "proxy", npmrc: "proxy=PROXY\n", proxied: true},
		{name: "from the environment", env: map[string]string{"npm_config_https_proxy": "PROXY"}, proxied: true},
		{name: "noproxy", npmrc: "https-proxy=PROXY\nnoproxy=example.org,127.0.0.1\n"},
		{name: "NO_PROXY when npmrc has none", npmrc: "https-proxy=PROXY\n", env: map[string]string{"NO_PROXY": "127.0.0.1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(seen())
			f := npmFixture(t, "cafile=CAFILE\n"+strings.ReplaceAll(tt.npmrc, "PROXY", proxy))
			for k, v := range tt.env {
				f.env[k] = strings.ReplaceAll(v, "PROXY", proxy)
			}
			f.mustRun("--source", "npm")
			got := seen()[before:]
			host := strings.TrimPrefix(f.srv.URL, "https://")
			if tt.proxied && (len(got) == 0 || got[0] != host) {
				t.Errorf("proxy saw %q, want %s", got, host)
			}
			if !tt.proxied && len(got) != 0 {
				t.Errorf("proxy saw %q, want nothing", got)
			}
		})
	}
}

func TestNpmAuthToken(t *testing.T) {
	f := npmFixture(t, "cafile=CAFILE\n")
	f.token = "s3cret"
	// The tarball moves elsewhere on the host, outside the token's path.
	tbPath := f.tarballPath("2.1.100")
	tb := f.files[tbPath]
	f.handle(tbPath, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, f.srv.URL+"/cdn/claude.tgz", http.StatusFound)
	})
	f.set("/cdn/claude.tgz", tb)
	before := f.snapshot()
	_, msg := f.run("--source", "npm")
	if want := "GET " + f.registry + "@anthropic-ai%2fclaude-code: HTTP 401 Unauthorized"; msg != want {
		t.Errorf("without a token: %q, want %q", msg, want)
	}
	f.assertUnchanged(before)
	host := strings.TrimPrefix(f.srv.URL, "https://")
	rc := "registry=" + f.registry + "\ncafile=" + f.certFile + "\n//" + host + "/npm/:_authToken=${NPM_TOKEN}\n"
	os.WriteFile(filepath.Join(f.home, ".npmrc"), []byte(rc), 0o644)
	f.env["NPM_TOKEN"] = "s3cret"
	f.mustRun("--source", "npm")
	if f.current() != "claude.2.1.100" {
		t.Errorf("claude -> %s", f.current())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range f.auths {
		if strings.HasPrefix(a, "/cdn/") && a != "/cdn/claude.tgz" {
			t.Errorf("token sent outside the registry path: %q", a)
		}
	}
	if !contains(f.auths, "/cdn/claude.tgz") {
		t.Errorf("the tarball was not fetched from /cdn/ without the token: %q", f.auths)
	}
	if !contains(f.auths, "/npm/@anthropic-ai/claude-code Bearer s3cret") {
		t.Errorf("no request with the token: %q", f.auths)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
