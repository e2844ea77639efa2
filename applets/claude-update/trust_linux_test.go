package claudeupdate

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/npmreg"
	"github.com/claude-sandbox/claude-sandbox/internal/release"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// markerScript writes its own name into dir when run.
func markerScript(dir string) []byte {
	return []byte("#!/bin/sh\necho \"$0 $*\" >>" + filepath.Join(dir, "ran") + "\necho 'https://evil.example/'\n")
}

// assertNothingRan fails if a planted program left its mark in dir.
func assertNothingRan(t *testing.T, dir string) {
	t.Helper()
	if data, err := os.ReadFile(filepath.Join(dir, "ran")); err == nil {
		t.Errorf("root ran planted programs:\n%s", data)
	}
}

// plantPath makes a directory where every program name found in the
// usual bin directories is a script that records that it ran.
func plantPath(t *testing.T, markers string) string {
	t.Helper()
	dir := filepath.Join(testutil.RootOwnedDir(t), "plant")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(testutil.RootOwnedDir(t), "marker")
	if err := os.WriteFile(script, markerScript(markers), 0o755); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, bin := range []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"} {
		ents, _ := os.ReadDir(bin)
		for _, e := range ents {
			if os.Symlink(script, filepath.Join(dir, e.Name())) == nil {
				n++
			}
		}
	}
	for _, name := range []string{"npm", "node", "npx", "bwrap", "sh"} {
		os.Symlink(script, filepath.Join(dir, name))
	}
	if n < 100 {
		t.Fatalf("planted only %d names", n)
	}
	return dir
}

// nvmLayout is the reported setup: a user's node installation
// (~/.nvm/versions/node/vX/{bin/node,bin/npm,etc/npmrc}) with a symlink to
// its node and npm in a root-owned directory on PATH, as
// /usr/local/bin/node is after `sudo ln -s`. The user's npmrc names the
// user's registry and CA. It returns that PATH directory.
func nvmLayout(t *testing.T, u testutil.User, markers, npmrc string) string {
	t.Helper()
	home := testutil.UserHome(t, u)
	prefix := filepath.Join(home, ".nvm", "versions", "node", "v22.0.0")
	for _, d := range []string{"bin", "etc"} {
		if err := os.MkdirAll(filepath.Join(prefix, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{filepath.Join(prefix, "bin", "node"), filepath.Join(prefix, "bin", "npm")} {
		if err := os.WriteFile(p, markerScript(markers), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(prefix, "etc", "npmrc"), []byte(npmrc), 0o644); err != nil {
		t.Fatal(err)
	}
	filepath.Walk(filepath.Join(home, ".nvm"), func(p string, _ os.FileInfo, _ error) error {
		u.Chown(t, p)
		return nil
	})
	local := filepath.Join(testutil.RootOwnedDir(t), "local-bin")
	if err := os.Mkdir(local, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"node", "npm"} {
		if err := os.Symlink(filepath.Join(prefix, "bin", n), filepath.Join(local, n)); err != nil {
			t.Fatal(err)
		}
	}
	return local
}

// TestRootIgnoresUsersNode: root takes neither the registry nor the CA from
// an npmrc in a user's node installation, derives no global npmrc from a
// node that leads there, and runs none of the user's programs: it installs
// from npm's default registry. --check runs no program at all, even when
// every name on PATH is planted and nothing names a registry.
func TestRootIgnoresUsersNode(t *testing.T) {
	u := testutil.RequireUser(t)
	if data, err := os.ReadFile("/etc/npmrc"); err == nil && strings.Contains(string(data), "registry") {
		testutil.Missing(t, "/etc/npmrc names a registry; this test needs npm's default")
	}
	f := newFixture(t)
	if p, err := release.Platform(runtime.GOARCH, "/bin/sh"); err == nil {
		f.platform = p
	}
	// npm's default registry, served by the fixture behind a proxy.
	const def = "https://registry.npmjs.org/"
	good := fakeAgent("2.1.100", agentSize)
	tb := f.npmTarball("2.1.100", good)
	f.npmPublish(map[string]string{"latest": "2.1.100"}, npmVersion{version: "2.1.100", tarball: tb})
	for _, name := range []string{npmreg.MainPackage, npmreg.Package(f.platform)} {
		data := strings.ReplaceAll(string(f.files["/npm/"+name]), f.srv.URL+"/npm/", def)
		f.set("/"+name, []byte(data))
	}
	f.set(strings.TrimPrefix(f.tarballPath("2.1.100"), "/npm"), tb)
	// The user's registry serves another binary.
	f.set("/evil/"+npmreg.MainPackage, f.files["/npm/"+npmreg.MainPackage])
	caFile, proxy, hosts := officialLookalike(t, f, "registry.npmjs.org")
	markers := t.TempDir()
	userCA := filepath.Join(testutil.PublicDir(t), "ca.pem")
	os.WriteFile(userCA, mustRead(t, f.certFile), 0o644)
	u.Chown(t, userCA)
	local := nvmLayout(t, u, markers, "registry="+f.srv.URL+"/evil/\ncafile="+userCA+"\n")
	plant := plantPath(t, markers)
	dir := filepath.Join(testutil.RootOwnedDir(t), "bin")
	env := []string{"CLAUDE_SBX_BINDIR=" + dir, "PATH=" + local + ":" + plant, "HTTPS_PROXY=" + proxy,
		"npm_config_cafile=" + caFile, "NPM_CONFIG_USERCONFIG=/nonexistent"}

	code, out, errOut := runBinary(t, env, "--source", "npm")
	if code != 0 {
		t.Fatalf("claude-update --source npm = %d, %q, %q", code, out, errOut)
	}
	nodeWarn := "claude-update: node " + mustLink(t, filepath.Join(local, "node")) + " is unsafe for root: "
	if !strings.HasPrefix(errOut, nodeWarn) || !strings.Contains(errOut, ": npm's global prefix is not taken from it\n") {
		t.Errorf("stderr = %q, want a line about the user's node", errOut)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "claude")); string(got) != string(good) {
		t.Errorf("claude is not the default registry's binary")
	}
	for _, h := range hosts() {
		if h != "registry.npmjs.org:443" {
			t.Errorf("proxy saw %s, want only registry.npmjs.org:443", h)
		}
	}
	if f.sawRequest("/evil/" + npmreg.MainPackage) {
		t.Errorf("the user's registry was asked")
	}
	assertNothingRan(t, markers)

	// Nothing names a registry now: --check asks npm's default, and runs
	// nothing, the user's npm included.
	os.WriteFile(filepath.Join(filepath.Dir(filepath.Dir(mustLink(t, filepath.Join(local, "npm")))), "etc", "npmrc"), nil, 0o644)
	for _, args := range [][]string{{"--check", "--source", "npm"}, {"--check", "--source", "npm", "2.1.100"}} {
		code, out, errOut = runBinary(t, env, args...)
		if code != 0 || out != "2.1.100 is current (latest)\n" && out != "2.1.100 is current (2.1.100)\n" {
			t.Errorf("claude-update %q = %d, %q, %q", args, code, out, errOut)
		}
	}
	assertNothingRan(t, markers)
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustLink(t *testing.T, p string) string {
	t.Helper()
	l, err := os.Readlink(p)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
