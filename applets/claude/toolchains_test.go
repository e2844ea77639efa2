//go:build linux

package claude_test

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
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// goRoot is where go.dev's instructions put Go.
const goRoot = "/usr/local/go"

func requireGoAt(t *testing.T, root string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(root, "bin", "go")); err != nil {
		testutil.Missing(t, "Go at %s (installed the way go.dev says): %v", root, err)
	}
}

// With Go at /usr/local/go on the user's PATH and no config, a module
// builds and its tests pass inside; the build cache is the sandbox's own.
func TestToolchainGoBuildsAndTests(t *testing.T) {
	requireGoAt(t, goRoot)
	s := testutil.NewSandbox(t)
	s.Env = append(s.Env, "PATH="+goRoot+"/bin:/usr/local/bin:/usr/bin:/bin")
	proj := filepath.Join(s.Home, "gomod")
	mkUserDir(t, s, proj)
	writeUserFile(t, s, filepath.Join(proj, "go.mod"), "module example.test/m\n\ngo 1.21\n", 0o644)
	writeUserFile(t, s, filepath.Join(proj, "m.go"), "package m\n\nfunc Twice(n int) int { return 2 * n }\n", 0o644)
	writeUserFile(t, s, filepath.Join(proj, "m_test.go"), "package m\n\nimport \"testing\"\n\nfunc TestTwice(t *testing.T) {\n\tif Twice(2) != 4 {\n\t\tt.Fatal(Twice(2))\n\t}\n}\n", 0o644)
	cmd := s.Command("--shell", "-c", `go version && go build ./... && go test -count=1 ./... && go env GOCACHE GOMODCACHE`)
	cmd.Dir = proj
	// The build cache starts empty: go test compiles the standard
	// library first, minutes on a busy machine.
	r := testutil.RunCommandWithin(t, cmd, 20*time.Minute)
	mustOK(t, r)
	if !strings.Contains(r.Stdout, "ok  \texample.test/m") {
		t.Errorf("go test did not pass inside: %v", r)
	}
	if !strings.Contains(r.Stdout, s.Home+"/.cache/go-build") {
		t.Errorf("GOCACHE is not in the sandbox's home: %v", r)
	}
	// The build cache landed in the project's sandbox home on the host,
	// never in a cache of the host's own.
	if _, err := os.Stat(filepath.Join(projectHome(t, s, proj), ".cache", "go-build")); err != nil {
		t.Errorf("no build cache in the project's sandbox home: %v", err)
	}
	// /usr/local/go is read-only inside.
	r = s.Shell(t, "touch "+goRoot+"/bin/planted; echo rc=$?")
	if !strings.Contains(r.Stdout, "rc=1") || !strings.Contains(r.Stderr+r.Stdout, "Read-only file system") {
		t.Errorf("%s writable inside: %v", goRoot, r)
	}
	if _, err := os.Stat(goRoot + "/bin/planted"); err == nil {
		os.Remove(goRoot + "/bin/planted")
		t.Fatalf("the sandbox planted a file in %s", goRoot)
	}
}

// A tool installed the way `npm install -g --prefix ~/.local` lays it out
// (a link in ~/.local/bin into ~/.local/lib/node_modules) runs inside.
func TestToolchainLocalPrefixTool(t *testing.T) {
	s := testutil.NewSandbox(t)
	m := marker(t)
	lib := filepath.Join(s.Home, ".local", "lib", "node_modules", "greet")
	bin := filepath.Join(s.Home, ".local", "bin")
	for _, d := range []string{filepath.Join(s.Home, ".local"), filepath.Join(s.Home, ".local", "lib"), filepath.Dir(lib), lib, bin} {
		mkUserDir(t, s, d)
	}
	writeUserFile(t, s, filepath.Join(lib, "cli.sh"), "#!/bin/sh\necho greet-"+m+"\n", 0o755)
	link := filepath.Join(bin, "greet")
	if err := os.Symlink("../lib/node_modules/greet/cli.sh", link); err != nil {
		t.Fatal(err)
	}
	s.User.Chown(t, link)
	s.Env = append(s.Env, "PATH="+bin+":/usr/bin:/bin")
	r := s.Shell(t, "greet")
	mustOK(t, r)
	if strings.TrimSpace(r.Stdout) != "greet-"+m {
		t.Errorf("greet inside = %v", r)
	}
}

// A token planted in each credential file of the home is never readable
// inside, whatever PATH names, and registry settings come without it.
func TestToolchainCredentialsNeverShown(t *testing.T) {
	s := testutil.NewSandbox(t)
	token := "tok-" + marker(t)
	files := map[string]string{
		".cargo/credentials.toml":  "[registry]\ntoken = \"" + token + "\"\n",
		".npmrc":                   "registry=https://u:" + token + "@registry.npmjs.org/\n//registry.npmjs.org/:_authToken=" + token + "\n",
		".pypirc":                  "[pypi]\npassword = " + token + "\n",
		".netrc":                   "machine example.com login u password " + token + "\n",
		".git-credentials":         "https://u:" + token + "@example.com\n",
		".docker/config.json":      `{"auths":{"x":{"auth":"` + token + `"}}}`,
		".config/gh/hosts.yml":     "github.com:\n  oauth_token: " + token + "\n",
		".aws/credentials":         "[default]\naws_secret_access_key = " + token + "\n",
		".config/pip/pip.conf":     "[global]\nindex-url = https://__token__:" + token + "@pypi.example/simple\n",
		".config/go/env":           "GOPROXY=https://u:" + token + "@goproxy.example,direct\n",
		".cargo/bin/cargo":         "#!/bin/sh\necho cargo\n",
		".docker/cli-plugins/x":    "#!/bin/sh\n",
		".local/bin/tool":          "#!/bin/sh\necho tool\n",
		".config/gh/bin/gh-helper": "#!/bin/sh\n",
	}
	writeHomeFiles(t, s, files, 0o700)
	var path []string
	for _, d := range []string{".cargo/bin", ".docker/cli-plugins", ".local/bin", ".config/gh/bin", ".config", ".aws", "."} {
		path = append(path, filepath.Join(s.Home, d))
	}
	s.Env = append(s.Env, "PATH="+strings.Join(path, ":")+":/usr/bin:/bin")
	r := s.Shell(t, `env; grep -rIl -e "`+token+`" / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev --exclude-dir=usr --exclude-dir=lib --exclude-dir=lib64 --exclude-dir=bin --exclude-dir=sbin --exclude-dir=etc 2>/dev/null; echo grep-done; cargo; tool`)
	if strings.Contains(r.Stdout+r.Stderr, token) {
		t.Errorf("a token is readable inside:\n%v", r)
	}
	for _, want := range []string{"grep-done", "cargo", "tool", "npm_config_userconfig=/run/claude-sandbox/toolchain/npmrc", "PIP_INDEX_URL=https://pypi.example/simple", "GOPROXY=https://goproxy.example,direct"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("inside output lacks %q:\n%v", want, r)
		}
	}
}

// The user's npm and cargo settings reach the sandbox as generated files,
// read-only, with the scoped registry, the CA file and the source
// replacement, and without the tokens planted beside them in the user's
// npmrc, config.toml and credentials.toml.
func TestToolchainGeneratedSettingsInside(t *testing.T) {
	s := testutil.NewSandbox(t)
	token := "tok-" + marker(t)
	ca := filepath.Join(s.Home, ".corp-ca.pem")
	files := map[string]string{
		".corp-ca.pem": "-----BEGIN CERTIFICATE-----\nTUlJQnN6Q0NBVm1nQXdJQkFnSVU=\n-----END CERTIFICATE-----\n",
		".npmrc": "registry=https://npm.corp.example/\n//npm.corp.example/:_authToken=" + token + "\n" +
			"@corp:registry=https://npm.corp.example/corp/\n//npm.corp.example/corp/:_password=" + token + "\n" +
			"cafile=" + ca + "\n_auth=" + token + "\n" +
			// The sandbox does not get SSH_AUTH_SOCK: a value naming it
			// is left out, never filled in from the launcher's.
			"@leak:registry=https://leak.example/${SSH_AUTH_SOCK}/\n",
		".cargo/config.toml": "[source.crates-io]\nreplace-with = \"corp\"\n\n[source.corp]\nregistry = \"sparse+https://crates.corp.example/index/\"\n\n" +
			"[registries.corp]\nindex = \"sparse+https://crates.corp.example/index/\"\ntoken = \"" + token + "\"\n\n[registry]\ntoken = \"" + token + "\"\n",
		".cargo/credentials.toml": "[registries.corp]\ntoken = \"" + token + "\"\n",
		".local/bin/tool":         "#!/bin/sh\necho tool\n",
	}
	writeHomeFiles(t, s, files, 0o600)
	os.Chmod(ca, 0o644)
	s.Env = append(s.Env, "PATH="+filepath.Join(s.Home, ".local/bin")+":/usr/bin:/bin", "SSH_AUTH_SOCK=/tmp/"+token)
	r := s.Shell(t, `echo "userconfig=$npm_config_userconfig"; cat "$npm_config_userconfig" /.cargo/config.toml; head -1 `+ca+`
grep -rIl -e "`+token+`" / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev --exclude-dir=usr --exclude-dir=lib --exclude-dir=lib64 --exclude-dir=bin --exclude-dir=sbin --exclude-dir=etc 2>/dev/null
echo grep-done
echo x >> "$npm_config_userconfig" || echo npmrc-read-only
echo x >> /.cargo/config.toml || echo cargo-read-only`)
	if strings.Contains(r.Stdout+r.Stderr, token) || strings.Contains(r.Stdout, "@leak") {
		t.Errorf("a token is readable inside:\n%v", r)
	}
	for _, want := range []string{
		"userconfig=/run/claude-sandbox/toolchain/npmrc",
		"\nregistry=https://npm.corp.example/\n",
		"\n@corp:registry=https://npm.corp.example/corp/\n",
		"\ncafile=" + ca + "\n",
		"\n[source.crates-io]\nreplace-with = \"corp\"\n",
		"\n[source.corp]\nregistry = \"sparse+https://crates.corp.example/index/\"\n",
		"\n[registries.corp]\nindex = \"sparse+https://crates.corp.example/index/\"\n",
		"-----BEGIN CERTIFICATE-----",
		"grep-done", "npmrc-read-only", "cargo-read-only",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("inside output lacks %q:\n%v", want, r)
		}
	}
	// npm itself reads it, when it is installed.
	npm := distCommand(t, "npm")
	s.Env = append(s.Env, "PATH="+filepath.Join(s.Home, ".local/bin")+":"+filepath.Dir(npm)+":/usr/bin:/bin")
	r = s.Shell(t, "npm config get @corp:registry; npm config get cafile")
	mustOK(t, r)
	if !strings.Contains(r.Stdout, "https://npm.corp.example/corp/\n"+ca+"\n") {
		t.Errorf("npm inside does not read the generated npmrc:\n%v", r)
	}
}

// npm install inside reaches a registry over HTTPS whose CA only the
// host's npmrc names (a TLS-inspecting proxy's, in companies).
func TestToolchainNpmRegistryCA(t *testing.T) {
	npm := distCommand(t, "npm")
	s := testutil.NewSandbox(t)
	tgz := npmTarball(t, "tinypkg", "1.0.0", "module.exports = 'tiny';\n")
	sum := sha512.Sum512(tgz)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, ".tgz"):
			w.Write(tgz)
		case strings.TrimPrefix(r.URL.Path, "/") == "tinypkg":
			json.NewEncoder(w).Encode(map[string]any{
				"name": "tinypkg", "dist-tags": map[string]string{"latest": "1.0.0"},
				"versions": map[string]any{"1.0.0": map[string]any{
					"name": "tinypkg", "version": "1.0.0",
					"dist": map[string]string{"tarball": "https://" + r.Host + "/tinypkg/-/tinypkg-1.0.0.tgz", "integrity": "sha512-" + base64.StdEncoding.EncodeToString(sum[:])},
				}},
			})
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ca := filepath.Join(s.Home, "corp-ca.pem")
	writeUserFile(t, s, ca, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})), 0o644)
	writeUserFile(t, s, filepath.Join(s.Home, ".npmrc"), "registry="+srv.URL+"/\ncafile="+ca+"\n", 0o600)
	proj := filepath.Join(s.Home, "web")
	mkUserDir(t, s, proj)
	writeUserFile(t, s, filepath.Join(proj, "package.json"), `{"name":"web","version":"1.0.0"}`, 0o644)
	s.Env = append(s.Env, "PATH="+filepath.Dir(npm)+":/usr/bin:/bin")
	cmd := s.Command("--shell", "-c", "npm install --no-audit --no-fund tinypkg && node -e 'console.log(require(\"tinypkg\"))'")
	cmd.Dir = proj
	r := testutil.RunCommand(t, cmd)
	mustOK(t, r)
	if !strings.Contains(r.Stdout, "tiny") {
		t.Errorf("npm install through the host's CA failed inside: %v", r)
	}
}

func npmTarball(t *testing.T, name, version, index string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range []struct{ name, body string }{
		{"package/package.json", `{"name":"` + name + `","version":"` + version + `","main":"index.js"}`},
		{"package/index.js", index},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(f.body))
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

// A Node and a Python project test inside with no config, with the
// interpreters where the distribution puts them.
func TestToolchainNodeAndPythonProjects(t *testing.T) {
	npm := distCommand(t, "npm")
	py := distCommand(t, "python3")
	s := testutil.NewSandbox(t)
	s.Env = append(s.Env, "PATH="+filepath.Dir(npm)+":"+filepath.Dir(py)+":/usr/bin:/bin")
	web := filepath.Join(s.Home, "web")
	mkUserDir(t, s, web)
	writeUserFile(t, s, filepath.Join(web, "package.json"), `{"name":"web","version":"1.0.0","scripts":{"test":"node test.js"}}`, 0o644)
	writeUserFile(t, s, filepath.Join(web, "test.js"), "require('assert').strictEqual(1 + 1, 2); console.log('node-tests-passed');\n", 0o644)
	cmd := s.Command("--shell", "-c", "npm test")
	cmd.Dir = web
	r := testutil.RunCommand(t, cmd)
	mustOK(t, r)
	if !strings.Contains(r.Stdout, "node-tests-passed") {
		t.Errorf("npm test inside: %v", r)
	}
	lib := filepath.Join(s.Home, "lib")
	mkUserDir(t, s, lib)
	writeUserFile(t, s, filepath.Join(lib, "calc.py"), "def add(a, b):\n    return a + b\n", 0o644)
	writeUserFile(t, s, filepath.Join(lib, "test_calc.py"), "import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n", 0o644)
	cmd = s.Command("--shell", "-c", "python3 -m unittest -v 2>&1")
	cmd.Dir = lib
	r = testutil.RunCommand(t, cmd)
	mustOK(t, r)
	if !strings.Contains(r.Stdout, "test_add (test_calc.T") || !strings.Contains(r.Stdout, "OK") {
		t.Errorf("python3 -m unittest inside: %v", r)
	}
}

// writeHomeFiles writes files (content by path relative to the home) in
// the test user's home, as the user, making the directories on the way.
func writeHomeFiles(t *testing.T, s *testutil.Sandbox, files map[string]string, mode os.FileMode) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(s.Home, rel)
		for d := filepath.Dir(p); d != s.Home; d = filepath.Dir(d) {
			if _, err := os.Stat(d); err != nil {
				mkUserDir(t, s, d)
			}
		}
		writeUserFile(t, s, p, content, mode)
	}
}

// distCommand is the path of the named command in the directories the
// distribution installs to, which the test user can read; the PATH the
// tests run with may name root's own (pyenv shims under /root), which the
// launcher rightly counts as inside a project it cannot resolve them out
// of.
func distCommand(t *testing.T, name string) string {
	t.Helper()
	for _, dir := range []string{"/usr/local/bin", "/usr/bin", "/bin"} {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	testutil.Missing(t, "%s not found in /usr/local/bin, /usr/bin or /bin", name)
	return ""
}
