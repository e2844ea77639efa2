package npmreg

import (
	"context"
	"errors"
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
	npmSays := func(v string, err error) func(context.Context, string) (string, error) {
		return func(_ context.Context, key string) (string, error) {
			if key != "registry" {
				return "undefined", nil
			}
			return v, err
		}
	}
	tests := []struct {
		name      string
		env       map[string]string
		home      string
		npm       func(context.Context, string) (string, error)
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
		{name: "npm config get", env: map[string]string{"PREFIX": emptyHome, "NPM_CONFIG_GLOBALCONFIG": filepath.Join(dir, "none")}, home: emptyHome, npm: npmSays("https://npm.example/", nil), want: "https://npm.example/", src: "npm config get registry"},
		{name: "nothing", env: map[string]string{"NPM_CONFIG_GLOBALCONFIG": filepath.Join(dir, "none")}, home: emptyHome, err: "no npm registry configured: set npm_config_registry, add registry=URL to ~/.npmrc, or pass --registry"},
		{name: "npm fails", env: map[string]string{"NPM_CONFIG_GLOBALCONFIG": filepath.Join(dir, "none")}, home: emptyHome, npm: npmSays("", errors.New("exec: \"npm\": executable file not found in $PATH")),
			err: "no npm registry configured (npm config get registry: exec: \"npm\": executable file not found in $PATH): set npm_config_registry or pass --registry"},
		{name: "http refused", home: httpHome, err: "registry http://plain.example/ from " + filepath.Join(httpHome, ".npmrc") + " is not https; claude-update needs https to trust the integrity hash"},
		{name: "credentials in URL refused", env: map[string]string{"npm_config_registry": "https://u:p@x.example/"}, err: `registry "https://u:p@x.example/" from environment variable npm_config_registry is not a plain URL`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string { return tt.env[k] }
			got, src, err := Registry(context.Background(), Config{Getenv: getenv, Home: tt.home, Npm: tt.npm})
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

func TestNpmConfigGet(t *testing.T) {
	if _, err := os.Stat("/usr/bin/npm"); err != nil {
		t.Skip("npm not installed")
	}
	// npm reads the npmrc of the HOME it is given.
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, ".npmrc"), []byte("registry=https://from-home.example/\n"), 0o644)
	got, err := NpmConfigGet(home, []string{"PATH=/usr/bin:/bin"})(context.Background(), "registry")
	if err != nil || got != "https://from-home.example/" {
		t.Fatalf("npm config get registry = %q, %v", got, err)
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
