package doctor

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/release"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// npmRegistry is an npm registry over TLS that publishes one version of
// the agent, for installing it with the real claude-update --source npm.
type npmRegistry struct {
	url string
	env []string // what claude-update needs to use it, and nothing else
}

// newNpmRegistry publishes bin as version v of @anthropic-ai/claude-code
// (and of its package for this platform) as npm's registry does.
func newNpmRegistry(t *testing.T, v string, bin []byte) *npmRegistry {
	t.Helper()
	platform, err := release.Platform(runtime.GOARCH, "/bin/sh")
	if err != nil {
		testutil.Missing(t, "no agent platform for this host: %v", err)
	}
	files := map[string][]byte{}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(data)
	}))
	t.Cleanup(srv.Close)

	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Name: "package/claude", Mode: 0o755, Size: int64(len(bin)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	tw.Write(bin)
	tw.Close()
	zw.Close()
	tarball := buf.Bytes()
	sum := sha512.Sum512(tarball)

	pkg := "@anthropic-ai/claude-code-" + platform
	tgz := "/" + pkg + "/-/claude-code-" + platform + "-" + v + ".tgz"
	files[tgz] = tarball
	files["/"+pkg] = mustJSON(t, map[string]any{
		"name": pkg, "dist-tags": map[string]string{"latest": v},
		"versions": map[string]any{v: map[string]any{"name": pkg, "version": v, "dist": map[string]any{
			"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sum[:]), "tarball": srv.URL + tgz, "unpackedSize": len(bin)}}},
	})
	files["/@anthropic-ai/claude-code"] = mustJSON(t, map[string]any{
		"name": "@anthropic-ai/claude-code", "dist-tags": map[string]string{"latest": v},
		"versions": map[string]any{v: map[string]any{"name": "@anthropic-ai/claude-code", "version": v,
			"optionalDependencies": map[string]string{pkg: v}}},
	})

	// As root, claude-update reads a cafile only if only root can write it.
	ca := filepath.Join(testutil.RootOwnedDir(t), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := srv.URL + "/"
	return &npmRegistry{url: reg, env: []string{
		"npm_config_registry=" + reg,
		"npm_config_cafile=" + ca,
		"npm_config_noproxy=*",
		"NO_PROXY=*",
		// The machine's npm configuration is not the test's.
		"NPM_CONFIG_GLOBALCONFIG=" + filepath.Join(t.TempDir(), "none"),
	}}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// claudeUpdate runs the real claude-update of the built binary with env.
func claudeUpdate(t *testing.T, env []string, args ...string) testutil.Result {
	t.Helper()
	cmd := exec.Command(testutil.Binary(t), args...)
	cmd.Args[0] = "claude-update"
	cmd.Env = env
	res := testutil.RunCommand(t, cmd)
	if res.Code != 0 {
		t.Fatalf("claude-update %q: %s", args, res)
	}
	return res
}
