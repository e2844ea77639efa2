package claudeupdate

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/google/go-cmp/cmp"

	"github.com/claude-sandbox/claude-sandbox/internal/bindir"
	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// fixture is an HTTPS server with the release layout (signed by a test key)
// and an npm registry, plus a bin dir to install into.
type fixture struct {
	t        *testing.T
	srv      *httptest.Server
	dir      string // bin dir
	home     string // HOME for npm configuration
	certFile string
	platform string
	env      map[string]string
	base     string // release base URL
	registry string // npm registry URL (ends with /)

	key, other       *openpgp.Entity
	keyFile, otherKF []byte
	fp, otherFP      string

	mu        sync.Mutex
	files     map[string][]byte
	handlers  map[string]http.HandlerFunc
	requests  []string // "PATH RANGE" of every request
	rawPaths  []string
	binHits   map[string]int
	baseOverr string
	root      bool     // run as if as root (the bin dir trust check applies)
	token     string   // if set, /npm/ answers 401 without "Bearer <token>"
	auths     []string // "PATH AUTHORIZATION" of every request
	free      int64    // if > 0, the free space claude-update sees
	resolver  *net.Resolver
	conf      string // the configuration file (absent unless a test writes it)
}

var (
	keysOnce sync.Once
	keyA     *openpgp.Entity
	keyB     *openpgp.Entity
)

func testKeys(t *testing.T) (*openpgp.Entity, *openpgp.Entity) {
	keysOnce.Do(func() {
		var err error
		cfg := &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA}
		if keyA, err = openpgp.NewEntity("release test", "", "release@example.invalid", cfg); err != nil {
			panic(err)
		}
		if keyB, err = openpgp.NewEntity("impostor", "", "impostor@example.invalid", cfg); err != nil {
			panic(err)
		}
	})
	return keyA, keyB
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{
		t:        t,
		dir:      filepath.Join(t.TempDir(), "bin"),
		home:     testutil.RootOwnedDir(t),
		platform: "linux-x64",
		env:      map[string]string{},
		files:    map[string][]byte{},
		handlers: map[string]http.HandlerFunc{},
		binHits:  map[string]int{},
	}
	f.key, f.other = testKeys(t)
	f.keyFile, f.fp = testutil.PublicKey(t, f.key)
	f.otherKF, f.otherFP = testutil.PublicKey(t, f.other)
	f.srv = httptest.NewTLSServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	f.base = f.srv.URL + "/claude-code-releases"
	f.registry = f.srv.URL + "/npm/"
	f.files["/keys/claude-code.asc"] = f.keyFile
	// Root reads only root's files as configuration: as root, the CA file
	// and the npmrc files are kept where only root can write.
	f.certFile = filepath.Join(testutil.RootOwnedDir(t), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.srv.Certificate().Raw})
	if err := os.WriteFile(f.certFile, pemBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	f.env["SSL_CERT_FILE"] = f.certFile
	f.env["CLAUDE_SBX_BINDIR"] = f.dir
	// The host's npm configuration is not the test's.
	f.env["NPM_CONFIG_GLOBALCONFIG"] = filepath.Join(f.home, "no-global-npmrc")
	f.conf = filepath.Join(testutil.RootOwnedDir(t), "claude-update.conf")
	return f
}

var modTime = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func (f *fixture) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, strings.TrimSpace(r.URL.Path+" "+r.Header.Get("Range")))
	f.rawPaths = append(f.rawPaths, r.RequestURI)
	f.auths = append(f.auths, strings.TrimSpace(r.URL.Path+" "+r.Header.Get("Authorization")))
	token := f.token
	if strings.HasSuffix(r.URL.Path, "/claude") || strings.HasSuffix(r.URL.Path, ".tgz") {
		f.binHits[r.URL.Path]++
	}
	h := f.handlers[r.URL.Path]
	data, ok := f.files[r.URL.Path]
	f.mu.Unlock()
	if token != "" && strings.HasPrefix(r.URL.Path, "/npm/") && r.Header.Get("Authorization") != "Bearer "+token {
		http.Error(w, "authentication required", http.StatusUnauthorized)
		return
	}
	if h != nil {
		h(w, r)
		return
	}
	if !ok {
		http.NotFound(w, r)
		return
	}
	serveBytes(w, r, data)
}

func serveBytes(w http.ResponseWriter, r *http.Request, data []byte) {
	sum := sha256.Sum256(data)
	w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:8])+`"`)
	http.ServeContent(w, r, "", modTime, bytes.NewReader(data))
}

func (f *fixture) set(path string, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[path] = data
}

func (f *fixture) handle(path string, h http.HandlerFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handlers[path] = h
}

func (f *fixture) hits(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.binHits[path]
}

func (f *fixture) sawRequest(req string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.requests {
		if r == req {
			return true
		}
	}
	return false
}

// fakeAgent is a shell script that answers --version like the agent,
// padded to size bytes after its exit.
func fakeAgent(v string, size int) []byte {
	return script("echo '"+v+" (Claude Code)'", size)
}

func script(body string, size int) []byte {
	s := []byte("#!/bin/sh\n" + body + "\nexit 0\n")
	for len(s) < size {
		s = append(s, "# padding padding padding padding padding padding padding padding\n"...)
	}
	if len(s) > size && size > 0 {
		s = s[:size]
	}
	return s
}

const agentSize = 256 << 10

// rel describes one published version; newRel fills in a correct one that
// tests then spoil.
type rel struct {
	version   string
	bin       []byte            // served as {platform}/claude
	builds    map[string][]byte // what the manifest describes, per platform
	sizeDelta int64             // added to the size in the manifest
	manifest  []byte            // if set, served instead of the generated one
	signer    *openpgp.Entity   // nil: unsigned
	buildDate string            // default 2025-01-01T00:00:00Z
	tamper    bool              // change the manifest after signing
}

func (f *fixture) newRel(v string) *rel {
	bin := fakeAgent(v, agentSize)
	return &rel{
		version: v,
		bin:     bin,
		builds:  map[string][]byte{f.platform: bin, "darwin-arm64": []byte("mach-o"), "linux-arm64": []byte("arm")},
		signer:  f.key,
	}
}

func (f *fixture) manifestJSON(r *rel) []byte {
	type build struct {
		Binary   string `json:"binary"`
		Checksum string `json:"checksum"`
		Size     int64  `json:"size"`
	}
	m := struct {
		Version   string           `json:"version"`
		BuildDate string           `json:"buildDate"`
		Platforms map[string]build `json:"platforms"`
	}{Version: r.version, BuildDate: "2025-01-01T00:00:00Z", Platforms: map[string]build{}}
	if r.buildDate != "" {
		m.BuildDate = r.buildDate
	}
	for p, b := range r.builds {
		sum := sha256.Sum256(b)
		size := int64(len(b))
		if p == f.platform {
			size += r.sizeDelta
		}
		m.Platforms[p] = build{Binary: "claude", Checksum: hex.EncodeToString(sum[:]), Size: size}
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		f.t.Fatal(err)
	}
	return data
}

// publish serves r.
func (f *fixture) publish(r *rel) {
	f.t.Helper()
	prefix := "/claude-code-releases/" + r.version
	manifest := r.manifest
	if manifest == nil {
		manifest = f.manifestJSON(r)
	}
	f.set(prefix+"/manifest.json", manifest)
	if r.signer != nil {
		var sig bytes.Buffer
		if err := openpgp.DetachSign(&sig, r.signer, bytes.NewReader(manifest), nil); err != nil {
			f.t.Fatal(err)
		}
		f.set(prefix+"/manifest.json.sig", sig.Bytes())
	}
	if r.tamper {
		f.set(prefix+"/manifest.json", bytes.Replace(manifest, []byte(`"buildDate": "2025`), []byte(`"buildDate": "2026`), 1))
	}
	f.set(prefix+"/"+f.platform+"/claude", r.bin)
}

// release publishes a correct version.
func (f *fixture) release(v string) { f.publish(f.newRel(v)) }

func (f *fixture) channel(name, body string) {
	f.set("/claude-code-releases/"+name, []byte(body))
}

func (f *fixture) binURL(v string) string {
	return f.base + "/" + v + "/" + f.platform + "/claude"
}

func (f *fixture) testEnv() env {
	base := f.base
	if f.baseOverr != "" {
		base = f.baseOverr
	}
	return env{
		getenv:      func(k string) string { return f.env[k] },
		releaseBase: base,
		keyURL:      f.srv.URL + "/keys/claude-code.asc",
		fingerprint: f.fp,
		platform:    func() (string, error) { return f.platform, nil },
		npmHome:     func() string { return f.home },
		npmDefault:  f.registry,
		resolver:    f.resolver,
		conf:        f.conf,
		retries:     2,
		backoff:     time.Millisecond,
		idle:        10 * time.Second,
		terminal:    func(io.Writer) bool { return false },
		free: func() (int64, error) {
			if f.free > 0 {
				return f.free, nil
			}
			return bindir.New(f.dir).Free()
		},
		euid: func() int {
			if f.root {
				return 0
			}
			return 1000
		},
	}
}

// run runs claude-update and returns stdout and the line the dispatcher
// would print ("" on success).
func (f *fixture) run(args ...string) (string, string) {
	f.t.Helper()
	out, err := f.runErr(args...)
	if err != nil && multicall.Code(err) != multicall.ExitFailure {
		f.t.Fatalf("claude-update %s: exit code %d (%v), want 1", strings.Join(args, " "), multicall.Code(err), err)
	}
	return out, multicall.Message(err)
}

// runCode runs claude-update and returns stdout, the exit code and the
// line the dispatcher would print.
func (f *fixture) runCode(args ...string) (string, int, string) {
	f.t.Helper()
	out, err := f.runErr(args...)
	return out, multicall.Code(err), multicall.Message(err)
}

func (f *fixture) runErr(args ...string) (string, error) {
	var stderr bytes.Buffer
	return f.runErrTo(&stderr, args...)
}

// runErrTo is runErr with stderr (warnings) going to w.
func (f *fixture) runErrTo(w io.Writer, args ...string) (string, error) {
	var out bytes.Buffer
	err := runEnv(context.Background(), args, multicall.Stdio{In: strings.NewReader(""), Out: &out, Err: w}, f.testEnv())
	return out.String(), err
}

// mustRun runs claude-update and fails the test on error.
func (f *fixture) mustRun(args ...string) string {
	f.t.Helper()
	out, msg := f.run(args...)
	if msg != "" {
		f.t.Fatalf("claude-update %s: %s\n%s", strings.Join(args, " "), msg, out)
	}
	return out
}

// snapshot records the bin dir: link targets, file hashes and modes (the
// lock file aside, which a run may create).
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() == bindir.PrivateDir {
			continue
		}
		p := filepath.Join(dir, e.Name())
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			m[e.Name()] = "-> " + target
		case fi.Mode().IsRegular():
			data, _ := os.ReadFile(p)
			sum := sha256.Sum256(data)
			m[e.Name()] = fmt.Sprintf("%v %x", fi.Mode(), sum[:8])
		default:
			m[e.Name()] = fi.Mode().String()
		}
	}
	return m
}

func (f *fixture) snapshot() map[string]string { return snapshot(f.t, f.dir) }

func (f *fixture) assertUnchanged(before map[string]string) {
	f.t.Helper()
	if diff := cmp.Diff(before, f.snapshot()); diff != "" {
		f.t.Errorf("bin dir changed after a failure (-before +after):\n%s", diff)
	}
}

func (f *fixture) current() string {
	f.t.Helper()
	t, err := os.Readlink(filepath.Join(f.dir, "claude"))
	if err != nil {
		f.t.Fatal(err)
	}
	return t
}

func (f *fixture) previous() string {
	t, _ := os.Readlink(filepath.Join(f.dir, "claude.previous"))
	return t
}

func (f *fixture) installed() []string {
	var names []string
	ents, _ := os.ReadDir(f.dir)
	for _, e := range ents {
		if e.Type().IsRegular() && strings.HasPrefix(e.Name(), "claude.") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}

// npm side.

type npmVersion struct {
	version   string
	tarball   []byte
	integrity string // default: the tarball's
}

func tgz(t testing.TB, files map[string][]byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o755, Size: int64(len(files[n])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(files[n])
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

func sri(b []byte) string {
	s := sha512.Sum512(b)
	return "sha512-" + base64.StdEncoding.EncodeToString(s[:])
}

func (f *fixture) npmTarball(v string, bin []byte) []byte {
	return tgz(f.t, map[string][]byte{
		"package/package.json": []byte(`{"name":"@anthropic-ai/claude-code-` + f.platform + `","version":"` + v + `"}`),
		"package/claude":       bin,
		"package/README.md":    []byte("readme"),
	})
}

// npmPublish serves a packument of the platform package with versions and
// dist-tags.
func (f *fixture) npmPublish(tags map[string]string, versions ...npmVersion) {
	name := "@anthropic-ai/claude-code-" + f.platform
	type dist struct {
		Integrity string `json:"integrity"`
		Tarball   string `json:"tarball"`
	}
	type ver struct {
		Name    string `json:"name"`
		Version string `json:"version"`
		Dist    dist   `json:"dist"`
	}
	doc := struct {
		Name     string            `json:"name"`
		DistTags map[string]string `json:"dist-tags"`
		Versions map[string]ver    `json:"versions"`
	}{Name: name, DistTags: tags, Versions: map[string]ver{}}
	for _, v := range versions {
		path := "/npm/" + name + "/-/claude-code-" + f.platform + "-" + v.version + ".tgz"
		integ := v.integrity
		if integ == "" {
			integ = sri(v.tarball)
		}
		doc.Versions[v.version] = ver{Name: name, Version: v.version, Dist: dist{Integrity: integ, Tarball: f.srv.URL + path}}
		f.set(path, v.tarball)
	}
	data, _ := json.Marshal(doc)
	f.set("/npm/"+name, data)
	deps := map[string]string{}
	for _, v := range versions {
		deps[v.version] = v.version
	}
	f.npmMain(tags, deps)
}

// npmMain publishes @anthropic-ai/claude-code with dist-tags tags; deps maps
// each of its versions to the platform package version it depends on.
func (f *fixture) npmMain(tags map[string]string, deps map[string]string) {
	name := "@anthropic-ai/claude-code"
	versions := map[string]any{}
	for v, pv := range deps {
		versions[v] = map[string]any{
			"name":    name,
			"version": v,
			"dist":    map[string]string{"integrity": sri([]byte(v)), "tarball": f.srv.URL + "/npm/" + name + "/-/claude-code-" + v + ".tgz"},
			"optionalDependencies": map[string]string{
				"@anthropic-ai/claude-code-" + f.platform: pv,
				"@anthropic-ai/claude-code-darwin-arm64":  pv,
			},
		}
	}
	data, _ := json.Marshal(map[string]any{"name": name, "dist-tags": tags, "versions": versions})
	f.set("/npm/"+name, data)
}

func (f *fixture) tarballPath(v string) string {
	return "/npm/@anthropic-ai/claude-code-" + f.platform + "/-/claude-code-" + f.platform + "-" + v + ".tgz"
}

// serveTar serves, as it is read, a gzipped tarball with one entry name of
// size bytes of zeros, written until done or the client goes away.
func serveTar(name string, size int64) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		zw := gzip.NewWriter(w)
		tw := tar.NewWriter(zw)
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: size, Typeflag: tar.TypeReg}); err != nil {
			panic(err)
		}
		zero := make([]byte, 1<<20)
		for left := size; left > 0; left -= int64(len(zero)) {
			if left < int64(len(zero)) {
				zero = zero[:left]
			}
			if _, err := tw.Write(zero); err != nil || r.Context().Err() != nil {
				return
			}
		}
		tw.Close()
		zw.Close()
	}
}

// drip sends a body of 1 MB one byte at a time, every 50ms: never idle for
// long, never done.
func drip(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Length", "1000000")
	w.WriteHeader(http.StatusOK)
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
			w.Write([]byte{0})
			w.(http.Flusher).Flush()
		}
	}
}

// npmBomb publishes version v of the platform package with the given
// dist.unpackedSize (0: none), its tarball served by h, and lots of free
// space (so that only the tarball limits can stop it).
func (f *fixture) npmBomb(v string, unpacked int64, h http.HandlerFunc) {
	name := "@anthropic-ai/claude-code-" + f.platform
	path := f.tarballPath(v)
	dist := map[string]any{"integrity": sri([]byte("x")), "tarball": f.srv.URL + path}
	if unpacked > 0 {
		dist["unpackedSize"] = unpacked
	}
	doc := map[string]any{
		"name":      name,
		"dist-tags": map[string]string{"latest": v},
		"versions":  map[string]any{v: map[string]any{"name": name, "version": v, "dist": dist}},
	}
	data, _ := json.Marshal(doc)
	f.set("/npm/"+name, data)
	f.npmMain(map[string]string{"latest": v}, map[string]string{v: v})
	f.handle(path, h)
	f.free = 1 << 40
}
