package npmreg

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRegistry(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	home := filepath.Join(dir, "home")
	write("home/.npmrc", "; user config\nfund=false\nregistry = https://user.example/npm\n")
	emptyHome := filepath.Join(dir, "empty")
	os.MkdirAll(emptyHome, 0o755)
	scopedHome := filepath.Join(dir, "scoped")
	write("scoped/.npmrc", "registry=https://all.example/\n@anthropic-ai:registry=\"https://scoped.example/r/\"\n")
	envHome := filepath.Join(dir, "envhome")
	write("envhome/.npmrc", "registry=https://${MIRROR_HOST}/npm/\n")
	httpHome := filepath.Join(dir, "httphome")
	write("httphome/.npmrc", "registry=http://plain.example/\n")
	write("prefix/etc/npmrc", "registry=https://global.example/\n")
	write("etc-npmrc", "registry=https://etc.example/\n")
	prefix := filepath.Join(dir, "prefix")
	tests := []struct {
		name      string
		env       map[string]string
		home      string
		want, src string
		err       string
	}{
		{name: "env wins", env: map[string]string{"npm_config_registry": "https://env.example"}, home: home, want: "https://env.example/", src: "environment variable npm_config_registry"},
		{name: "upper-case env", env: map[string]string{"NPM_CONFIG_REGISTRY": "https://env.example/x/"}, home: home, want: "https://env.example/x/", src: "environment variable NPM_CONFIG_REGISTRY"},
		{name: "user npmrc", home: home, want: "https://user.example/npm/", src: filepath.Join(home, ".npmrc")},
		{name: "scoped registry wins", home: scopedHome, want: "https://scoped.example/r/", src: filepath.Join(scopedHome, ".npmrc")},
		{name: "variable in npmrc", env: map[string]string{"MIRROR_HOST": "mirror.example"}, home: envHome, want: "https://mirror.example/npm/", src: filepath.Join(envHome, ".npmrc")},
		{name: "global npmrc under PREFIX", env: map[string]string{"PREFIX": prefix}, home: emptyHome, want: "https://global.example/", src: filepath.Join(prefix, "etc", "npmrc")},
		{name: "explicit userconfig", env: map[string]string{"NPM_CONFIG_USERCONFIG": filepath.Join(dir, "etc-npmrc")}, home: home, want: "https://etc.example/", src: filepath.Join(dir, "etc-npmrc")},
		{name: "explicit globalconfig", env: map[string]string{"NPM_CONFIG_GLOBALCONFIG": filepath.Join(dir, "etc-npmrc")}, home: emptyHome, want: "https://etc.example/", src: filepath.Join(dir, "etc-npmrc")},
		{name: "nothing: npm's default", env: map[string]string{"NPM_CONFIG_GLOBALCONFIG": filepath.Join(dir, "none")}, home: emptyHome, want: DefaultRegistry, src: "npm's default"},
		{name: "http refused", home: httpHome, err: "registry http://plain.example/ from " + filepath.Join(httpHome, ".npmrc") + " is not https; claude-update needs https to trust the integrity hash"},
		{name: "credentials in URL refused", env: map[string]string{"npm_config_registry": "https://u:p@x.example/"}, err: `registry "https://u:p@x.example/" from environment variable npm_config_registry is not a plain URL`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string { return tt.env[k] }
			got, src, err := Registry(Config{Getenv: getenv, Home: tt.home})
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("Registry() = %q, %v; want error %q", got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want || src != tt.src {
				t.Fatalf("Registry() = %q, %q, %v; want %q from %q", got, src, err, tt.want, tt.src)
			}
		})
	}
}

// TestRegistryTrust: with Trust set (root), an npmrc that Trust refuses is
// skipped with one line, and so is the node a global prefix would come
// from: the registry is then the next place's, or npm's default.
func TestRegistryTrust(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	os.MkdirAll(home, 0o755)
	os.WriteFile(filepath.Join(home, ".npmrc"), []byte("registry=https://user.example/\n"), 0o644)
	nvm := filepath.Join(dir, "nvm", "bin")
	os.MkdirAll(nvm, 0o755)
	os.MkdirAll(filepath.Join(dir, "nvm", "etc"), 0o755)
	os.WriteFile(filepath.Join(nvm, "node"), nil, 0o755)
	os.WriteFile(filepath.Join(dir, "nvm", "etc", "npmrc"), []byte("registry=https://nvm.example/\n"), 0o644)
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	os.Symlink(filepath.Join(nvm, "node"), filepath.Join(bin, "node"))
	var lines []string
	c := Config{
		Getenv: func(k string) string {
			if k == "PATH" {
				return bin
			}
			return ""
		},
		Home:  home,
		Trust: func(what, p string) error { return errors.New(what + " " + p + " is not root's") },
		Logf:  func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) },
	}
	reg, from, err := Registry(c)
	if err != nil || reg != DefaultRegistry || from != "npm's default" {
		t.Errorf("Registry() = %q, %q, %v; want %q from npm's default", reg, from, err, DefaultRegistry)
	}
	want := []string{
		"node " + filepath.Join(bin, "node") + " is not root's: npm's global prefix is not taken from it",
		"npmrc " + filepath.Join(home, ".npmrc") + " is not root's; skipped",
	}
	// A file that does not exist is not vetted.
	if _, err := os.Stat("/etc/npmrc"); err == nil {
		want = append(want, "npmrc /etc/npmrc is not root's; skipped")
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func FuzzParseNpmrc(f *testing.F) {
	f.Add([]byte("registry=https://x/\n; c\n# c\n@a:registry = \"https://${H}/\"\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m := ParseNpmrc(b, func(string) string { return "v" })
		for k, v := range m {
			if strings.TrimSpace(k) != k || strings.ContainsAny(k, "\n=") || strings.HasPrefix(k, ";") || strings.HasPrefix(k, "#") {
				t.Fatalf("ParseNpmrc(%q) has key %q", b, k)
			}
			if strings.Contains(v, "\n") || strings.Contains(v, "${") && !strings.Contains(string(b), "${") {
				t.Fatalf("ParseNpmrc(%q) has value %q", b, v)
			}
		}
	})
}

// Keys below a [section] header are the section's: npm reads no setting
// from them.
func TestEntriesSections(t *testing.T) {
	got := Entries([]byte("registry=https://top.example/\n[other]\nregistry=https://section.example/\n_authToken=x\n"), nil)
	if len(got) != 1 || got[0] != (Entry{"registry", "https://top.example/"}) {
		t.Errorf("Entries() = %q, want only the top-level registry", got)
	}
}
