package toolchain

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type fakeFiles map[string]string

func (f fakeFiles) ReadFile(p string) ([]byte, error) {
	if s, ok := f[p]; ok {
		return []byte(s), nil
	}
	return nil, fs.ErrNotExist
}

const token = "npm_SECRETTOKEN0123456789"

func TestSettings(t *testing.T) {
	files := fakeFiles{
		"/home/u/.npmrc": "registry=https://user:" + token + "@npm.corp.example/\n" +
			"//npm.corp.example/:_authToken=" + token + "\n_auth=" + token + "\n" +
			"cafile=/home/u/certs/corp.pem\nstrict-ssl=true\nemail=u@example.com\n" +
			"certfile=/home/u/.ssh/client.pem\nkeyfile=/home/u/.ssh/client.key\n",
		"/home/u/.nvm/versions/node/v20/etc/npmrc": "https-proxy=http://proxy:" + token + "@proxy.corp:3128\nregistry=https://ignored.example/\n",
		"/etc/pip.conf": "[global]\nindex-url = https://__token__:" + token + "@pypi.corp.example/simple\ncert = /etc/ssl/certs/corp.pem\nclient-cert = /home/u/.ssh/pip.pem\n" +
			"[search]\nindex = https://other.example/\n",
		"/home/u/.config/go/env": "GOPROXY=https://u:" + token + "@goproxy.corp,direct\nGOFLAGS=-mod=mod\nGOPRIVATE=*.corp.example\nGOAUTH=netrc\n",
	}
	got := ReadSettings(files, SettingsInput{
		Home:        "/home/u",
		Getenv:      func(string) string { return "" },
		NpmPrefixes: []string{"/home/u/.nvm/versions/node/v20"},
	})
	want := []string{
		"npm_config_registry=https://npm.corp.example/",
		"NODE_EXTRA_CA_CERTS=/home/u/certs/corp.pem",
		"npm_config_cafile=/home/u/certs/corp.pem",
		"npm_config_strict_ssl=true",
		"npm_config_https_proxy=http://proxy.corp:3128",
		"PIP_CERT=/etc/ssl/certs/corp.pem",
		"PIP_INDEX_URL=https://pypi.corp.example/simple",
		"GOPROXY=https://goproxy.corp,direct",
		"GOFLAGS=-mod=mod",
		"GOPRIVATE=*.corp.example",
	}
	if diff := cmp.Diff(want, got.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"/home/u/certs/corp.pem", "/etc/ssl/certs/corp.pem"}, got.Files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	all := strings.Join(append(append(got.Env, got.Files...), got.Notes...), "\n")
	for _, secret := range []string{token, ".ssh", "u@example.com"} {
		if strings.Contains(all, secret) {
			t.Errorf("the settings carry %q:\n%s", secret, all)
		}
	}
}

// A configuration file the sandbox can write is the agent's: it is not
// read, and a CA file it names there, or in a credential place, is not shown.
func TestSettingsFromWritablePlaces(t *testing.T) {
	files := fakeFiles{
		"/home/u/src/p/.npmrc": "cafile=/home/u/.ssh/id_rsa\n",
		"/home/u/.npmrc":       "cafile=/home/u/.ssh/id_rsa\n",
		"/etc/pip.conf":        "[global]\ncert = /home/u/src/p/ca.pem\n",
	}
	got := ReadSettings(files, SettingsInput{
		Home:     "/home/u",
		Getenv:   func(string) string { return "" },
		Writable: []string{"/home/u/src/p"},
	})
	if len(got.Env) != 0 || len(got.Files) != 0 {
		t.Errorf("ReadSettings = env %q files %q, want nothing", got.Env, got.Files)
	}
	notes := strings.Join(got.Notes, "\n")
	for _, want := range []string{
		"/home/u/.npmrc: cafile /home/u/.ssh/id_rsa is a place where credentials are kept: left out",
		"/etc/pip.conf: cert /home/u/src/p/ca.pem lies where the sandbox can write: left out",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
}

// The environment wins, as in each tool.
func TestSettingsEnvironmentWins(t *testing.T) {
	files := fakeFiles{"/home/u/.npmrc": "registry=https://file.example/\n", "/home/u/.config/go/env": "GOPROXY=https://file.example\n"}
	env := map[string]string{"npm_config_registry": "https://env.example/", "GOPROXY": "https://env.example"}
	got := ReadSettings(files, SettingsInput{Home: "/home/u", Getenv: func(k string) string { return env[k] }})
	if len(got.Env) != 0 {
		t.Errorf("ReadSettings = %q, want nothing over the environment's", got.Env)
	}
}

func TestCertsOnly(t *testing.T) {
	cert := "-----BEGIN CERTIFICATE-----\nTUlJQnN6Q0NBVm1nQXdJQkFnSVU=\n-----END CERTIFICATE-----\n"
	key := "-----BEGIN PRIVATE KEY-----\nTUlJQnN6Q0NBVm1nQXdJQkFnSVU=\n-----END PRIVATE KEY-----\n"
	for _, tt := range []struct{ name, in, err string }{
		{"one", cert, ""},
		{"bundle with comments", "# corp root\n\n" + cert + "# intermediate\n" + cert, ""},
		{"a key", cert + key, "it holds a PRIVATE KEY block, not only certificates"},
		{"text before", "password=hunter2\n" + cert, "it holds text besides certificates"},
		{"text after", cert + "token: abc\n", "it holds text besides certificates"},
		{"no certificate", "# nothing\n", "it holds no PEM certificate"},
		{"an ssh key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaA==\n-----END OPENSSH PRIVATE KEY-----\n", "it holds a OPENSSH PRIVATE KEY block, not only certificates"},
		{"plain file", "secret notes\n", "it holds no PEM certificate"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := CertsOnly([]byte(tt.in))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.err {
				t.Errorf("CertsOnly() = %q, want %q", got, tt.err)
			}
		})
	}
}
