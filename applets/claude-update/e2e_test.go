package claudeupdate

import (
	"context"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/npmreg"
	"github.com/claude-sandbox/claude-sandbox/internal/release"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// tarballCache is a caching reverse proxy in front of the real registry:
// packuments are fetched fresh and passed on with their tarball URLs pointed
// at the proxy; tarballs are kept in dir, named by the sha512 the packument
// gives, so reruns do not download them again. claude-update still checks
// the integrity itself: the proxy only saves bandwidth.
type tarballCache struct {
	upstream string // registry URL, ends with /
	dir      string
	srv      *httptest.Server
	mu       sync.Mutex
	want     map[string]string // proxy path -> upstream URL
	sums     map[string][]byte // proxy path -> sha512
	hits     int
	misses   int
}

func (c *tarballCache) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/-tarball/") {
		c.tarball(w, r)
		return
	}
	// Packument: pass through (abbreviated if asked so), rewriting
	// dist.tarball.
	req, err := http.NewRequest(http.MethodGet, c.upstream+strings.TrimPrefix(r.RequestURI, "/"), nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req.Header.Set("Accept", r.Header.Get("Accept"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		http.Error(w, resp.Status, resp.StatusCode)
		return
	}
	var doc map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	versions, _ := doc["versions"].(map[string]any)
	c.mu.Lock()
	for v, e := range versions {
		dist, _ := e.(map[string]any)["dist"].(map[string]any)
		orig, _ := dist["tarball"].(string)
		integ, _ := dist["integrity"].(string)
		sums, err := npmreg.ParseIntegrity(integ)
		if orig == "" || err != nil {
			continue
		}
		p := "/-tarball/" + v + ".tgz"
		c.want[p], c.sums[p] = orig, sums[0]
		dist["tarball"] = c.srv.URL + p
	}
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(doc)
}

func (c *tarballCache) tarball(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	orig, sum := c.want[r.URL.Path], c.sums[r.URL.Path]
	c.mu.Unlock()
	if orig == "" {
		http.NotFound(w, r)
		return
	}
	path := filepath.Join(c.dir, hex.EncodeToString(sum)+".tgz")
	if !hasSum(path, sum) {
		c.mu.Lock()
		c.misses++
		c.mu.Unlock()
		if err := fetchTo(orig, path, sum); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
	} else {
		c.mu.Lock()
		c.hits++
		c.mu.Unlock()
	}
	http.ServeFile(w, r, path)
}

func hasSum(path string, sum []byte) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	h := sha512.New()
	if _, err := io.Copy(h, f); err != nil {
		return false
	}
	return string(h.Sum(nil)) == string(sum)
}

func fetchTo(url, path string, sum []byte) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".fetch.*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	h := sha512.New()
	if _, err := io.Copy(io.MultiWriter(tmp, h), resp.Body); err != nil {
		tmp.Close()
		return err
	}
	tmp.Close()
	if string(h.Sum(nil)) != string(sum) {
		return fmt.Errorf("GET %s: sha512-%s, packument says sha512-%s", url, base64.StdEncoding.EncodeToString(h.Sum(nil)), base64.StdEncoding.EncodeToString(sum))
	}
	// Keep only this tarball: the cache holds one version at a time.
	old, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*.tgz"))
	for _, o := range old {
		os.Remove(o)
	}
	return os.Rename(tmp.Name(), path)
}

// TestE2ENpm installs the real agent from the npm registry this machine's
// npm is configured with into a temporary bin dir, with the shipped binary,
// and runs it. Run by `make e2e-update`.
func TestE2ENpm(t *testing.T) {
	testutil.E2E(t, testutil.E2EUpdate)
	npm := testutil.RequireCommand(t, "npm")
	out, err := exec.Command(npm, "config", "get", "registry").Output()
	if err != nil {
		testutil.Missing(t, "npm config get registry: %v", err)
	}
	upstream, err := npmreg.CheckURL(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("npm's registry: %v", err)
	}
	platform, err := release.Platform("amd64", "/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	cacheBase := os.Getenv("CLAUDE_SBX_AGENT_CACHE")
	if cacheBase == "" {
		cacheBase = "/var/cache/claude-sandbox-tests"
	}
	cache := &tarballCache{upstream: upstream, dir: filepath.Join(cacheBase, "npm-tarballs"), want: map[string]string{}, sums: map[string][]byte{}}
	if err := os.MkdirAll(cache.dir, 0o755); err != nil {
		testutil.Missing(t, "cache dir: %v", err)
	}
	cache.srv = httptest.NewTLSServer(cache)
	defer cache.srv.Close()
	// As root, a CA file is read only if only root can write it.
	ca := filepath.Join(testutil.RootOwnedDir(t), "ca.pem")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cache.srv.Certificate().Raw}), 0o644)

	// As root, the bin dir must be one only root can change.
	dir := filepath.Join(testutil.RootOwnedDir(t), "bin")
	// The proxy's CA, as npm would take it (it wins over the host's
	// npmrc, which may name a cafile of its own).
	env := []string{"CLAUDE_SBX_BINDIR=" + dir, "npm_config_cafile=" + ca}
	t.Logf("registry %s, platform %s, cache %s", upstream, platform, cache.dir)
	code, stdout, stderr := runBinary(t, env, "--source", "npm", "--registry", cache.srv.URL+"/")
	t.Logf("claude-update --source npm:\n%s%s", stdout, stderr)
	if code != 0 {
		t.Fatalf("claude-update exit %d: %s", code, stderr)
	}
	t.Logf("tarball cache: %d hits, %d misses", cache.hits, cache.misses)
	target, err := os.Readlink(filepath.Join(dir, "claude"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := release.ParseVersion(strings.TrimPrefix(target, "claude."))
	if err != nil {
		t.Fatalf("claude -> %s: %v", target, err)
	}
	if !strings.HasSuffix(stdout, "installed "+v.String()+" in "+dir+"\n") {
		t.Errorf("output = %q", stdout)
	}
	cmd := exec.CommandContext(context.Background(), filepath.Join(dir, "claude"), "--version")
	cmd.Env = []string{"HOME=" + t.TempDir(), "DISABLE_UPDATES=1", "PATH=/usr/bin:/bin"}
	ver, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(ver)) != v.String()+" (Claude Code)" {
		t.Fatalf("installed claude --version = %q, %v; want %q", ver, err, v.String()+" (Claude Code)")
	}

	// Without --registry, the registry comes from npm's configuration (as
	// root: root's npmrc, the global npmrc, or npm's default registry) and
	// agrees.
	code, stdout, stderr = runBinary(t, []string{"CLAUDE_SBX_BINDIR=" + dir, "HOME=/nonexistent"}, "--source", "npm", "--check")
	if want := v.String() + " is current (latest)\n"; code != 0 || stdout != want {
		t.Errorf("--check against npm's registry = %d, %q, %q; want 0, %q", code, stdout, stderr, want)
	}
}
