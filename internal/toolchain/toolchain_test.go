package toolchain

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeHost is a file tree: a path is a directory, a file ("f") or a link
// ("-> target").
type fakeHost map[string]string

type fakeInfo struct {
	name string
	mode fs.FileMode
}

func (i fakeInfo) Name() string       { return i.name }
func (i fakeInfo) Size() int64        { return 0 }
func (i fakeInfo) Mode() fs.FileMode  { return i.mode }
func (i fakeInfo) ModTime() time.Time { return time.Time{} }
func (i fakeInfo) IsDir() bool        { return i.mode.IsDir() }
func (i fakeInfo) Sys() any           { return nil }

func (h fakeHost) add(paths ...string) fakeHost {
	for _, p := range paths {
		kind := "d"
		if i := strings.Index(p, " "); i > 0 {
			p, kind = p[:i], p[i+1:]
		}
		h[p] = kind
		for d := filepath.Dir(p); d != "/"; d = filepath.Dir(d) {
			if _, ok := h[d]; !ok {
				h[d] = "d"
			}
		}
	}
	return h
}

func (h fakeHost) mode(p string) (fs.FileMode, bool) {
	if p == "/" {
		return fs.ModeDir, true
	}
	k, ok := h[p]
	switch {
	case !ok:
		return 0, false
	case k == "d":
		return fs.ModeDir, true
	case strings.HasPrefix(k, "-> "):
		return fs.ModeSymlink, true
	}
	return 0, true
}

func (h fakeHost) Lstat(p string) (fs.FileInfo, error) {
	m, ok := h.mode(p)
	if !ok {
		return nil, fs.ErrNotExist
	}
	return fakeInfo{filepath.Base(p), m}, nil
}

func (h fakeHost) Stat(p string) (fs.FileInfo, error) {
	r, err := h.EvalSymlinks(p)
	if err != nil {
		return nil, err
	}
	return h.Lstat(r)
}

func (h fakeHost) Readlink(p string) (string, error) {
	if k := h[p]; strings.HasPrefix(k, "-> ") {
		return k[3:], nil
	}
	return "", errors.New("not a link")
}

func (h fakeHost) ReadDir(p string) ([]fs.DirEntry, error) {
	var out []fs.DirEntry
	for q := range h {
		if filepath.Dir(q) == p {
			m, _ := h.mode(q)
			out = append(out, fs.FileInfoToDirEntry(fakeInfo{filepath.Base(q), m}))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

func (h fakeHost) EvalSymlinks(p string) (string, error) {
	cur := "/"
	parts := strings.Split(strings.TrimPrefix(filepath.Clean(p), "/"), "/")
	for hops := 0; len(parts) > 0; {
		next := filepath.Join(cur, parts[0])
		parts = parts[1:]
		m, ok := h.mode(next)
		if !ok {
			return "", fs.ErrNotExist
		}
		if m&fs.ModeSymlink != 0 {
			if hops++; hops > 40 {
				return "", errors.New("too many links")
			}
			t, _ := h.Readlink(next)
			if !filepath.IsAbs(t) {
				t = filepath.Join(cur, t)
			}
			parts = append(strings.Split(strings.TrimPrefix(filepath.Clean(t), "/"), "/"), parts...)
			cur = "/"
			continue
		}
		cur = next
	}
	return cur, nil
}

var systemVisible = func(p string) bool {
	for _, d := range []string{"/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/lib", "/usr/share"} {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

const home = "/home/u"

func roots(p Plan) []string {
	var out []string
	for _, t := range p.Toolchains {
		out = append(out, t.Roots...)
	}
	return out
}

func TestMake(t *testing.T) {
	writable := []string{"/home/u/.claude-home", "/tmp/claude-private-1000", "/home/u/src/p"}
	for _, tt := range []struct {
		name      string
		host      fakeHost
		path      string
		wantRoots []string
		wantPath  []string
		wantSkip  []string // "path: reason" of what is skipped
	}{
		{
			name:      "go at /usr/local/go as go.dev says",
			host:      fakeHost{}.add("/usr/local/go/bin/go f", "/usr/local/go/pkg", "/usr/bin"),
			path:      "/usr/local/go/bin:/usr/bin:/bin",
			wantRoots: []string{"/usr/local/go"},
			wantPath:  []string{"/usr/local/go/bin", "/usr/bin", "/bin"},
		},
		{
			name:      "/usr/local without its etc",
			host:      fakeHost{}.add("/usr/local/bin/tool f", "/usr/local/lib/x", "/usr/local/share/man", "/usr/local/etc/secret f"),
			path:      "/usr/local/bin:/usr/bin",
			wantRoots: []string{"/usr/local/bin", "/usr/local/lib", "/usr/local/share"},
			wantPath:  []string{"/usr/local/bin", "/usr/bin"},
		},
		{
			name: "rustup",
			host: fakeHost{}.add("/home/u/.cargo/bin/cargo f", "/home/u/.cargo/credentials.toml f", "/home/u/.cargo/registry",
				"/home/u/.rustup/toolchains/stable/bin/cargo f", "/home/u/.rustup/settings.toml f"),
			path:      "/home/u/.cargo/bin:/usr/bin",
			wantRoots: []string{"/home/u/.cargo/bin", "/home/u/.rustup/toolchains", "/home/u/.rustup/settings.toml"},
			wantPath:  []string{"/home/u/.cargo/bin", "/usr/bin"},
		},
		{
			name:      "nvm behind a link in /usr/local/bin (the nvm-plus-sudo layout)",
			host:      fakeHost{}.add("/usr/local/bin/node -> /home/u/.nvm/versions/node/v20.1.0/bin/node", "/home/u/.nvm/versions/node/v20.1.0/bin/node f", "/home/u/.nvm/versions/node/v20.1.0/lib/node_modules", "/home/u/.nvm/nvm.sh f"),
			path:      "/usr/local/bin:/usr/bin",
			wantRoots: []string{"/usr/local/bin", "/home/u/.nvm/versions/node/v20.1.0"},
			wantPath:  []string{"/usr/local/bin", "/usr/bin"},
		},
		{
			name:      "pyenv: one root for shims, bin and plugins",
			host:      fakeHost{}.add("/home/u/.pyenv/shims/python f", "/home/u/.pyenv/bin/pyenv f", "/home/u/.pyenv/plugins/pyenv-virtualenv/shims", "/home/u/.pyenv/versions/3.12/bin/python f"),
			path:      "/home/u/.pyenv/plugins/pyenv-virtualenv/shims:/home/u/.pyenv/shims:/home/u/.pyenv/bin:/usr/bin",
			wantRoots: []string{"/home/u/.pyenv"},
			wantPath:  []string{"/home/u/.pyenv/plugins/pyenv-virtualenv/shims", "/home/u/.pyenv/shims", "/home/u/.pyenv/bin", "/usr/bin"},
		},
		{
			name:      "~/.local/bin and ~/go/bin",
			host:      fakeHost{}.add("/home/u/.local/bin/x -> ../lib/node_modules/x/cli.js", "/home/u/.local/lib/node_modules/x/cli.js f", "/home/u/.local/share/keyrings/login f", "/home/u/go/bin/gopls f", "/home/u/go/pkg/mod"),
			path:      "/home/u/.local/bin:/home/u/go/bin",
			wantRoots: []string{"/home/u/.local/bin", "/home/u/.local/lib", "/home/u/go/bin"},
			wantPath:  []string{"/home/u/.local/bin", "/home/u/go/bin"},
		},
		{
			name:      "the project's bin is visible already, nothing bound",
			host:      fakeHost{}.add("/home/u/src/p/node_modules/.bin/tsc f"),
			path:      "/home/u/src/p/node_modules/.bin:/usr/bin",
			wantPath:  []string{"/home/u/src/p/node_modules/.bin", "/usr/bin"},
			wantRoots: nil,
		},
		{
			name:     "the home itself and its parents are never bound",
			host:     fakeHost{}.add("/home/u/notes f"),
			path:     "/home/u:/home:/:/usr/bin",
			wantPath: []string{"/usr/bin"},
			wantSkip: []string{"/home/u: is or holds the home directory", "/home: is or holds the home directory", "/: is or holds the home directory"},
		},
		{
			name: "a credential directory in PATH",
			host: fakeHost{}.add("/home/u/.ssh/id_rsa f", "/home/u/.docker/cli-plugins/docker-buildx f", "/home/u/.config/gh/hosts.yml f"),
			path: "/home/u/.ssh:/home/u/.docker/cli-plugins:/home/u/.config/gh",
			wantSkip: []string{"/home/u/.ssh: is or holds /home/u/.ssh, where credentials are kept",
				"/home/u/.docker/cli-plugins: is or holds /home/u/.docker, where credentials are kept",
				"/home/u/.config/gh: is or holds /home/u/.config/gh, where credentials are kept"},
		},
		{
			name:     "a directory that holds a credential",
			host:     fakeHost{}.add("/home/u/.config/gh/hosts.yml f", "/home/u/.config/tool/t f"),
			path:     "/home/u/.config:/usr/bin",
			wantPath: []string{"/usr/bin"},
			wantSkip: []string{"/home/u/.config: holds /home/u/.config/gh, where credentials are kept"},
		},
		{
			name:     "a directory that holds the project",
			host:     fakeHost{}.add("/home/u/src/p/bin/x f", "/home/u/src/tool f"),
			path:     "/home/u/src",
			wantSkip: []string{"/home/u/src: holds /home/u/src/p, which the sandbox can write"},
		},
		{
			name:     "a directory below the sandbox's home or /tmp",
			host:     fakeHost{}.add("/home/u/.claude-home/.local/bin/x f", "/tmp/claude-private-1000/bin/x f"),
			path:     "/home/u/.claude-home/.local/bin:/tmp/claude-private-1000/bin",
			wantPath: []string{"/home/u/.claude-home/.local/bin", "/tmp/claude-private-1000/bin"},
		},
		{
			name:     "a link in PATH into a writable place",
			host:     fakeHost{}.add("/opt/tool -> /home/u/src/p/tool", "/home/u/src/p/tool/bin/x f"),
			path:     "/opt/tool/bin",
			wantSkip: []string{"/home/u/src/p/tool/bin: lies in /home/u/src/p, which the sandbox can write"},
		},
		{
			name:     "missing and relative directories",
			host:     fakeHost{}.add("/usr/bin"),
			path:     ".:bin:/nonexistent:/usr/bin",
			wantPath: []string{"/usr/bin"},
			wantSkip: []string{".: not an absolute directory", "bin: not an absolute directory", "/nonexistent: does not exist"},
		},
		{
			name:      "links out of a bin directory: into pipx's venvs, not into a project's build",
			host:      fakeHost{}.add("/home/u/.local/bin/black -> /home/u/.local/share/pipx/venvs/black/bin/black", "/home/u/.local/share/pipx/venvs/black/bin/black f", "/home/u/.local/bin/tool -> /home/u/other/build/tool", "/home/u/other/build/tool f"),
			path:      "/home/u/.local/bin",
			wantRoots: []string{"/home/u/.local/bin", "/home/u/.local/share/pipx/venvs/black"},
			wantPath:  []string{"/home/u/.local/bin"},
		},
		{
			name:     "a PATH directory an earlier project replaced by a link",
			host:     fakeHost{}.add("/home/u/a/bin -> /home/u/b", "/home/u/b/secret f"),
			path:     "/home/u/a/bin:/usr/bin",
			wantPath: []string{"/usr/bin"},
			wantSkip: []string{"/home/u/a/bin: is reached through the symlink /home/u/a/bin in /home/u/a, which an earlier sandbox may have written as its project"},
		},
		{
			name:     "a PATH directory reached through a link in the sandbox's home",
			host:     fakeHost{}.add("/opt/t -> /home/u/.claude-home/t", "/home/u/.claude-home/t -> /opt/real", "/opt/real/bin/x f"),
			path:     "/opt/t/bin",
			wantSkip: []string{"/opt/t/bin: is reached through the symlink /home/u/.claude-home/t in /home/u/.claude-home, which the sandbox can write"},
		},
		{
			name:      "/opt/NAME/bin and sdkman",
			host:      fakeHost{}.add("/opt/jdk/bin/java f", "/home/u/.sdkman/candidates/java/current/bin/java f", "/home/u/.sdkman/etc/config f"),
			path:      "/opt/jdk/bin:/home/u/.sdkman/candidates/java/current/bin",
			wantRoots: []string{"/opt/jdk", "/home/u/.sdkman/candidates"},
			wantPath:  []string{"/opt/jdk/bin", "/home/u/.sdkman/candidates/java/current/bin"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := Make(tt.host, Input{Home: home, Dirs: strings.Split(tt.path, ":"), Visible: systemVisible, Writable: writable})
			if diff := cmp.Diff(tt.wantRoots, roots(p)); diff != "" {
				t.Errorf("roots (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantPath, p.Path); diff != "" {
				t.Errorf("path (-want +got):\n%s", diff)
			}
			var skipped []string
			for _, s := range p.Skipped {
				skipped = append(skipped, s.Path+": "+s.Why)
			}
			if diff := cmp.Diff(tt.wantSkip, skipped); diff != "" {
				t.Errorf("skipped (-want +got):\n%s\n%+v", diff, p.Skipped)
			}
		})
	}
}

// No root the plan binds is, lies in or holds a credential path of the one
// list, whatever PATH says.
func TestNoRootShowsASecret(t *testing.T) {
	h := fakeHost{}
	var dirs []string
	for _, s := range SecretList(home) {
		h.add(s + "/token f")
		dirs = append(dirs, s, filepath.Dir(s), s+"/bin")
	}
	h.add("/home/u/.cargo/bin/cargo f", "/home/u/.config/tool/bin/t f")
	dirs = append(dirs, "/home/u/.cargo/bin", "/home/u/.config/tool/bin", "/usr/local/etc/bin")
	p := Make(h, Input{Home: home, Dirs: dirs, Visible: systemVisible})
	for _, r := range roots(p) {
		for _, s := range SecretList(home) {
			if r == s || strings.HasPrefix(r, s+"/") || strings.HasPrefix(s, r+"/") {
				t.Errorf("root %s shows the credential path %s", r, s)
			}
		}
	}
	if len(roots(p)) == 0 {
		t.Fatal("nothing bound: the test binds nothing it could catch")
	}
}

// Credential files inside a root (a toolchain's own global npmrc, a
// version's pip.conf) are hidden; other files are not.
func TestMasks(t *testing.T) {
	h := fakeHost{}.add(
		"/home/u/.nvm/versions/node/v20/bin/node f", "/home/u/.nvm/versions/node/v20/etc/npmrc f",
		"/home/u/.pyenv/shims/python f", "/home/u/.pyenv/versions/3.12/pip.conf f", "/home/u/.pyenv/versions/3.12/bin/python f",
		"/home/u/.pyenv/versions/3.12/lib/python3.12/site.py f", "/opt/tool/bin/t f", "/opt/tool/.netrc f", "/opt/tool/etc/tool.conf f")
	p := Make(h, Input{Home: home, Dirs: []string{"/home/u/.nvm/versions/node/v20/bin", "/home/u/.pyenv/shims", "/opt/tool/bin"}, Visible: systemVisible})
	want := []string{"/home/u/.nvm/versions/node/v20/etc/npmrc", "/home/u/.pyenv/versions/3.12/pip.conf", "/opt/tool/.netrc"}
	if diff := cmp.Diff(want, p.Masks); diff != "" {
		t.Errorf("masks (-want +got):\n%s", diff)
	}
}

// The docs and the man page name every credential place of the one list.
func TestSecretListDocumented(t *testing.T) {
	for _, doc := range []string{"../../docs/launcher.md", "../../man/claude-sandbox-init.5"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(b), `\`, "")
		for _, s := range SecretList("~") {
			if !strings.Contains(text, s) {
				t.Errorf("%s does not name the credential place %s", doc, s)
			}
		}
	}
}

// Secret answers as the list does: p is a credential path or lies in one.
func TestSecretIsTheList(t *testing.T) {
	for _, h := range []string{home, "/", "/home/u/", "/home"} {
		list := secretPaths(h)
		paths := []string{h, "/home/u", "/home/u/.sshx", "/home/u/.config", "/usr/local/etc", "/usr/local/etcx", "/usr/local/etc/npmrc", "/etc/npmrc", "/etc/npmrc.d"}
		for _, c := range list {
			paths = append(paths, c, c+"/x", c+"x", filepath.Dir(c))
		}
		for _, p := range paths {
			want := ""
			for _, c := range list {
				if p == c || under(p, c) {
					want = c
					break
				}
			}
			if got := Secret(h, p); got != want {
				t.Errorf("Secret(%q, %q) = %q, want %q", h, p, got, want)
			}
		}
	}
}
