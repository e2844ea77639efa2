package sandbox

import (
	"bytes"
	"errors"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
	"github.com/claude-sandbox/claude-sandbox/internal/sandboxcfg"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// fakeHost is a file system of paths: "d" directory, "f" file, "s" socket,
// anything else a symlink to that target.
type fakeHost struct {
	files     map[string]string
	reachable map[string]bool
	// contents are the contents of files ("" if absent).
	contents map[string]string
}

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

// resolve follows symlinks in every component of p.
func (h *fakeHost) resolve(p string, depth int) (string, bool) {
	if depth > 16 {
		return "", false
	}
	p = path.Clean(p)
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	cur := "/"
	for i, part := range parts {
		if part == "" {
			continue
		}
		next := path.Join(cur, part)
		v, ok := h.files[next]
		if !ok {
			return "", false
		}
		switch v {
		case "d", "f", "s":
			cur = next
		default:
			t := v
			if !path.IsAbs(t) {
				t = path.Join(cur, t)
			}
			r, ok := h.resolve(t, depth+1)
			if !ok {
				return "", false
			}
			cur = r
		}
		_ = i
	}
	return cur, true
}

func (h *fakeHost) info(p string, v string) fakeInfo {
	switch v {
	case "d":
		return fakeInfo{path.Base(p), fs.ModeDir | 0o755}
	case "f":
		return fakeInfo{path.Base(p), 0o644}
	case "s":
		return fakeInfo{path.Base(p), fs.ModeSocket | 0o755}
	}
	return fakeInfo{path.Base(p), fs.ModeSymlink | 0o777}
}

func (h *fakeHost) Stat(p string) (fs.FileInfo, error) {
	r, ok := h.resolve(p, 0)
	if !ok {
		return nil, &fs.PathError{Op: "stat", Path: p, Err: fs.ErrNotExist}
	}
	if r == "/" {
		return fakeInfo{"/", fs.ModeDir | 0o755}, nil
	}
	return h.info(r, h.files[r]), nil
}

func (h *fakeHost) Lstat(p string) (fs.FileInfo, error) {
	dir, ok := h.resolve(path.Dir(p), 0)
	if ok && dir != "/" && h.files[dir] != "d" {
		return nil, &fs.PathError{Op: "lstat", Path: p, Err: syscall.ENOTDIR}
	}
	if !ok {
		return nil, &fs.PathError{Op: "lstat", Path: p, Err: fs.ErrNotExist}
	}
	q := path.Join(dir, path.Base(p))
	v, ok := h.files[q]
	if !ok {
		return nil, &fs.PathError{Op: "lstat", Path: p, Err: fs.ErrNotExist}
	}
	return h.info(q, v), nil
}

func (h *fakeHost) Readlink(p string) (string, error) {
	v, ok := h.files[p]
	if !ok || v == "d" || v == "f" || v == "s" {
		return "", &fs.PathError{Op: "readlink", Path: p, Err: fs.ErrInvalid}
	}
	return v, nil
}

func (h *fakeHost) Glob(pattern string) ([]string, error) {
	var out []string
	for p := range h.files {
		if ok, _ := path.Match(pattern, p); ok {
			out = append(out, p)
		}
	}
	sortStrings(out)
	return out, nil
}

func (h *fakeHost) ReadDir(p string) ([]fs.DirEntry, error) {
	if h.files[p] != "d" && p != "/" {
		return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
	}
	var out []fs.DirEntry
	for _, f := range sortedKeys(h.files) {
		if path.Dir(f) == p && f != p {
			out = append(out, fs.FileInfoToDirEntry(h.info(f, h.files[f])))
		}
	}
	return out, nil
}

func sortedKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sortStrings(out)
	return out
}

func (h *fakeHost) EvalSymlinks(p string) (string, error) {
	r, ok := h.resolve(p, 0)
	if !ok {
		return "", &fs.PathError{Op: "lstat", Path: p, Err: fs.ErrNotExist}
	}
	return r, nil
}

func (h *fakeHost) Reachable(s string) bool { return h.reachable[s] }

func (h *fakeHost) ReadFile(p string, max int64) ([]byte, error) {
	if fi, err := h.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, &fs.PathError{Op: "open", Path: p, Err: syscall.ELOOP}
	}
	r, ok := h.resolve(p, 0)
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
	}
	if b, ok := h.contents[r]; ok {
		if int64(len(b)) > max {
			return nil, &TooLargeError{int64(len(b)), max}
		}
		return []byte(b), nil
	}
	if h.files[r] == "f" {
		return nil, nil
	}
	return nil, &fs.PathError{Op: "read", Path: p, Err: fs.ErrInvalid}
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// debianHost is a merged-/usr Debian machine with the agent installed.
func debianHost() *fakeHost {
	h := &fakeHost{files: map[string]string{}, reachable: map[string]bool{}, contents: map[string]string{}}
	for _, d := range []string{"/usr", "/usr/bin", "/usr/lib", "/usr/lib64", "/usr/libexec", "/usr/share", "/usr/include", "/usr/sbin",
		"/etc", "/etc/ld.so.conf.d", "/etc/ssl", "/etc/ca-certificates", "/etc/alternatives",
		"/opt", "/opt/claude", "/opt/claude/bin", "/home", "/home/u", "/home/u/.claude-home", "/home/u/.opam",
		"/home/u/projects", "/home/u/projects/p", "/home/u/other", "/tmp", "/run", "/run/user", "/run/user/1000",
		"/var", "/var/lib", "/usr/share/zoneinfo", "/dev", "/usr/local", "/usr/local/bin",
		"/usr/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu/systemd"} {
		h.files[d] = "d"
	}
	for _, f := range []string{"/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/resolv.conf", "/etc/gai.conf", "/etc/host.conf",
		"/etc/hosts", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/os-release", "/etc/machine-id", "/usr/share/zoneinfo/UTC",
		"/opt/claude/bin/claude.2.1.0", "/usr/bin/bash", "/usr/bin/systemd-run", "/usr/local/bin/fish", "/dev/kvm",
		"/usr/lib/x86_64-linux-gnu/systemd/libsystemd-shared-252.so"} {
		h.files[f] = "f"
	}
	h.files["/opt/claude/bin/claude"] = "claude.2.1.0"
	h.files["/etc/localtime"] = "/usr/share/zoneinfo/UTC"
	h.files["/bin"] = "usr/bin"
	h.files["/sbin"] = "usr/sbin"
	h.files["/lib"] = "usr/lib"
	h.files["/lib64"] = "usr/lib64"
	return h
}

var baseEnv = []string{
	"HOME=/home/u", "USER=u", "LOGNAME=u", "SHELL=/bin/bash", "TERM=xterm-256color", "LANG=C.UTF-8",
	"PATH=/home/u/bin:/usr/local/bin:/usr/bin:/bin", "ANTHROPIC_API_KEY=sk-test",
	"DISPLAY=:0", "SSH_AUTH_SOCK=/run/user/1000/ssh", "DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus",
	"XDG_RUNTIME_DIR=/run/user/1000", "XDG_SESSION_ID=3", "TMUX=/tmp/tmux-1000/default,1,0", "TMUX_PANE=%1",
	"INVOCATION_ID=abc", "PWD=/home/u/projects/p", "MY_OWN=kept",
}

func baseSpec() Spec {
	return Spec{
		UID: 1000, User: "u", Home: "/home/u", Pwd: "/home/u/projects/p",
		SandboxHome: "/home/u/.claude-home", BinDir: "/opt/claude/bin", Netns: "agents", NetnsEnter: "/usr/local/bin/netns-enter",
		Environ: baseEnv, Args: []string{"-p", "hello world", "", "it's"},
		ConfigName: "~/.claude-sandbox-init",
	}
}

func parseConfig(t *testing.T, s Spec, src string) []sandboxcfg.Directive {
	t.Helper()
	d, err := sandboxcfg.Parse([]byte(src), sandboxcfg.Options{Name: s.ConfigName, Vars: sandboxcfg.Vars{Home: s.Home, Pwd: s.Pwd, User: s.User}})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func dryRun(t *testing.T, h Host, s Spec) string {
	t.Helper()
	l, err := Build(h, s)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	var b bytes.Buffer
	if err := l.WriteDryRun(&b, "/usr/bin/bwrap", 123); err != nil {
		t.Fatal(err)
	}
	b.WriteString("# chain environment:\n")
	for _, kv := range l.Env {
		b.WriteString("#   " + kv + "\n")
	}
	return b.String()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	testutil.Golden(t, filepath.Join("testdata", name+".golden"), got)
}

func TestGoldenChain(t *testing.T) {
	tests := []struct {
		name string
		host func(*fakeHost)
		spec func(*Spec)
	}{
		{"default", nil, nil},
		{"shell", nil, func(s *Spec) { s.Shell = true; s.Args = []string{"-c", "echo hi"} }},
		{"shell-invisible", nil, func(s *Spec) {
			s.Shell = true
			s.Args = nil
			// /usr/local/bin is not in PATH, so no toolchain shows it.
			s.Environ = append(append([]string(nil), baseEnv...), "SHELL=/usr/local/bin/fish", "PATH=/usr/bin:/bin")
		}},
		{"systemd", func(h *fakeHost) { userManager(h, allControllers) }, nil},
		{"no-runtime-dir", nil, func(s *Spec) {
			var env []string
			for _, kv := range baseEnv {
				if !strings.HasPrefix(kv, "XDG_RUNTIME_DIR=") {
					env = append(env, kv)
				}
			}
			s.Environ = env
		}},
		{"netns", func(h *fakeHost) {
			h.files["/run/netns"] = "d"
			h.files["/run/netns/agents"] = "f"
			h.files["/usr/local/bin/netns-enter"] = "f"
			h.files["/etc/netns"] = "d"
			h.files["/etc/netns/agents"] = "d"
			h.files["/etc/netns/agents/resolv.conf"] = "f"
		}, nil},
		{"netns-helper-missing", func(h *fakeHost) {
			h.files["/run/netns"] = "d"
			h.files["/run/netns/agents"] = "f"
		}, nil},
		{"netns-systemd", func(h *fakeHost) {
			userManager(h, allControllers)
			h.files["/run/netns"] = "d"
			h.files["/run/netns/agents"] = "f"
			h.files["/usr/local/bin/netns-enter"] = "f"
		}, nil},
		{"project-git", func(h *fakeHost) {
			h.files["/home/u/projects/p/.git"] = "d"
			h.files["/home/u/projects/p/src"] = "d"
		}, func(s *Spec) { s.Pwd = "/home/u/projects/p/src" }},
		{"project-not-visible", nil, func(s *Spec) { s.Pwd = "/" }},
		{"split-usr", func(h *fakeHost) {
			for _, d := range []string{"/bin", "/sbin", "/lib", "/lib64"} {
				h.files[d] = "d"
			}
			h.files["/bin/bash"] = "f"
			h.files["/run/systemd"] = "d"
			h.files["/run/systemd/resolve"] = "d"
			h.files["/etc/pki"] = "d"
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := debianHost()
			if tt.host != nil {
				tt.host(h)
			}
			s := baseSpec()
			if tt.spec != nil {
				tt.spec(&s)
			}
			golden(t, "chain-"+tt.name, dryRun(t, h, s))
		})
	}
}

func TestGoldenDirectives(t *testing.T) {
	tests := []struct{ name, config string }{
		{"ro", "ro /var/lib\nro /var/lib /mnt/lib"},
		{"ro-try", "ro-try /var/lib/pacman\nro-try /var/lib"},
		{"rw", "rw ~/.opam"},
		{"rw-try", "rw-try ~/.cargo\nrw-try ~/.opam /opam"},
		{"dev", "dev /dev/kvm"},
		{"dev-try", "dev-try /dev/dri\ndev-try /dev/kvm"},
		{"tmpfs", "tmpfs /home/u/.cache"},
		{"dir", "dir /srv/work"},
		{"symlink", "symlink /tmp /home/u/tmp"},
		{"setenv", "setenv EDITOR 'vim -u NONE'\nsetenv PATH /opt/claude/bin:/usr/bin"},
		{"unsetenv", "unsetenv ANTHROPIC_API_KEY NOT_SET"},
		{"chdir", "rw ~/projects/p\nchdir ~/projects/p"},
		{"command", "command /opt/claude/bin/claude --model opus"},
		{"bwrap", "bwrap --hostname sandbox --remount-ro /home/u"},
		{"seccomp", "seccomp-allow perf_event_open\nseccomp-deny ptrace"},
		{"if-pwd-under", "if pwd-under ~/projects\n  tmpfs ~/projects\n  rw $PWD\n  chdir $PWD\nend"},
		{"if-pwd-not-under", "if pwd-under ~/other\n  rw $PWD\nend\nif not exists /nonexistent\n  ro /var/lib\nend"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := debianHost()
			s := baseSpec()
			s.Config = parseConfig(t, s, tt.config)
			golden(t, "directive-"+tt.name, dryRun(t, h, s))
		})
	}
}

// A symlink into ~/projects must not make the condition hold for the
// physical directory it points to, and a symlinked ~/projects still counts.
func TestPwdUnderPhysical(t *testing.T) {
	cfg := "project off\nif pwd-under ~/projects\n  rw $PWD\nend"
	tests := []struct {
		name  string
		host  func(*fakeHost)
		pwd   string
		bound bool
	}{
		{"inside", nil, "/home/u/projects/p", true},
		{"projects itself", nil, "/home/u/projects", false},
		{"sibling with common prefix", func(h *fakeHost) { h.files["/home/u/projects2"] = "d" }, "/home/u/projects2", false},
		{"elsewhere", nil, "/home/u/other", false},
		{"symlinked projects dir", func(h *fakeHost) {
			h.files["/data"] = "d"
			h.files["/data/projects"] = "d"
			h.files["/data/projects/q"] = "d"
			h.files["/home/u/projects"] = "/data/projects"
		}, "/data/projects/q", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := debianHost()
			if tt.host != nil {
				tt.host(h)
			}
			s := baseSpec()
			s.Pwd = tt.pwd
			s.Config = parseConfig(t, s, cfg)
			l, err := Build(h, s)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, o := range l.Plan.Ops {
				if o.Src == tt.pwd && o.Dest == tt.pwd {
					found = true
				}
			}
			if found != tt.bound {
				t.Errorf("pwd %s bound = %v, want %v", tt.pwd, found, tt.bound)
			}
		})
	}
}

func TestBuildErrors(t *testing.T) {
	tests := []struct {
		name   string
		host   func(*fakeHost)
		config string
		shell  bool
		want   string
	}{
		{"agent missing", func(h *fakeHost) { delete(h.files, "/opt/claude/bin/claude") }, "", false, "/opt/claude/bin/claude not found: run claude-update"},
		{"bindir missing", func(h *fakeHost) { delete(h.files, "/opt/claude/bin") }, "", false, "/opt/claude/bin/claude not found: run claude-update"},
		{"missing source", nil, "\nro /nonexistent", false, "~/.claude-sandbox-init:2: ro: /nonexistent does not exist (use ro-try to skip a missing path)"},
		{"missing rw source", nil, "rw ~/.cargo", false, "~/.claude-sandbox-init:1: rw: /home/u/.cargo does not exist (use rw-try to skip a missing path)"},
		{"chdir invisible", nil, "project off\nchdir /home/u/projects/p", false, "~/.claude-sandbox-init:2: chdir: /home/u/projects/p is not visible in the sandbox"},
		{"command invisible", nil, "toolchains off\ncommand /usr/local/bin/fish", false, "~/.claude-sandbox-init:2: command: /usr/local/bin/fish is not visible in the sandbox"},
		// Symlinks the agent could have left where it can write: bwrap
		// would follow them on the host at the next start.
		{"planted link on a destination path in the sandbox home",
			func(h *fakeHost) { h.files["/home/u/.claude-home/.config"] = "/home/u/.cache" },
			"ro /etc/hosts ~/.config/git/config", false,
			"~/.claude-sandbox-init:1: ro: /home/u/.claude-home/.config is a symlink in /home/u/.claude-home, which the sandbox can write: remove it (the agent may have made it) or name the real path"},
		{"planted link under a tmpfs destination",
			func(h *fakeHost) { h.files["/home/u/.claude-home/projects"] = "/home/u/other" },
			"project off\nif pwd-under ~/projects\n tmpfs ~/projects\nend", false,
			"~/.claude-sandbox-init:3: tmpfs: /home/u/.claude-home/projects is a symlink in /home/u/.claude-home, which the sandbox can write: remove it (the agent may have made it) or name the real path"},
		{"the agent decides whether the project is bound", func(h *fakeHost) { h.files["/home/u/projects/p/flag"] = "f" },
			"if exists ~/projects/p/flag\n project ro\nend", false,
			"~/.claude-sandbox-init:1: exists: /home/u/projects/p/flag lies in /home/u/projects/p, which the sandbox can write: the agent could decide this condition: test a path outside it"},
		{"planted link on the project's way in the sandbox home",
			func(h *fakeHost) { h.files["/home/u/.claude-home/projects"] = "/home/u/other" },
			"", false,
			"project /home/u/projects/p: /home/u/.claude-home/projects is a symlink in /home/u/.claude-home, which the sandbox can write: remove it (the agent may have made it) or name the real path"},
		{"planted link as the source of a bind inside a rw project",
			func(h *fakeHost) { h.files["/home/u/projects/p/.git"] = "/home/u/.ssh" },
			"rw $PWD\nro-try $PWD/.git", false,
			"~/.claude-sandbox-init:2: ro-try: /home/u/projects/p/.git is a symlink in /home/u/projects/p, which the sandbox can write: remove it (the agent may have made it) or name the real path"},
		{"planted link in the private tmp of earlier launchers",
			func(h *fakeHost) {
				h.files["/tmp/claude-private-1000"] = "d"
				h.files["/tmp/claude-private-1000/x"] = "/home/u"
			},
			"ro /tmp/claude-private-1000/x/.ssh /s", false,
			"~/.claude-sandbox-init:1: ro: /tmp/claude-private-1000/x is a symlink in /tmp/claude-private-1000, which the sandbox can write: remove it (the agent may have made it) or name the real path"},
		// Conditions the agent could decide by creating or removing a
		// file where it can write.
		{"exists in a rw project", nil,
			"rw $PWD\nif exists $PWD/.use-kvm\n dev /dev/kvm\nend", false,
			"~/.claude-sandbox-init:2: exists: /home/u/projects/p/.use-kvm lies in /home/u/projects/p, which the sandbox can write: the agent could decide this condition: test a path outside it"},
		{"exists in the sandbox home", nil,
			"if not exists ~/.claude-home/off\n ro /var/lib\nend", false,
			"~/.claude-sandbox-init:1: exists: /home/u/.claude-home/off lies in /home/u/.claude-home, which the sandbox can write: the agent could decide this condition: test a path outside it"},
		{"exists through a link of yours into a rw mount of a block that does not hold",
			func(h *fakeHost) { h.files["/home/u/p-link"] = "/home/u/projects/p" },
			"if pwd-under /srv\n rw /home/u/projects/p\nend\nif exists ~/p-link/flag\n ro /var/lib\nend", false,
			"~/.claude-sandbox-init:4: exists: /home/u/p-link/flag lies in /home/u/projects/p, which the sandbox can write: the agent could decide this condition: test a path outside it"},
		{"exists in an earlier project", func(h *fakeHost) {
			h.files["/home/u/src"] = "d"
			h.files["/home/u/src/x"] = "d"
		}, "if exists ~/src/x/.use-kvm\n dev /dev/kvm\nend", false,
			"~/.claude-sandbox-init:1: exists: /home/u/src/x/.use-kvm lies in /home/u/src, which the sandbox can write: the agent could decide this condition: test a path outside it"},
		{"symlink destination through a planted link",
			func(h *fakeHost) { h.files["/home/u/.claude-home/bin"] = "/usr/local/bin" },
			"symlink /usr/bin/bash ~/bin/sh", false,
			"~/.claude-sandbox-init:1: symlink: /home/u/.claude-home/bin is a symlink in /home/u/.claude-home, which the sandbox can write: remove it (the agent may have made it) or name the real path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := debianHost()
			if tt.host != nil {
				tt.host(h)
			}
			s := baseSpec()
			s.Shell = tt.shell
			s.Config = parseConfig(t, s, tt.config)
			_, err := Build(h, s)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Build error = %v, want %s", err, tt.want)
			}
			var ce *sandboxcfg.Error
			if strings.HasPrefix(tt.want, "~/") != errors.As(err, &ce) {
				t.Errorf("error %T: config error = %v, want %v", err, errors.As(err, &ce), strings.HasPrefix(tt.want, "~/"))
			}
		})
	}
}

func TestShellWithoutAgent(t *testing.T) {
	h := debianHost()
	delete(h.files, "/opt/claude/bin/claude")
	s := baseSpec()
	s.Shell = true
	if _, err := Build(h, s); err != nil {
		t.Fatalf("Build(--shell) without agent: %v", err)
	}
}

func TestScrubEnv(t *testing.T) {
	tests := []struct {
		name    string
		systemd bool
		in      []string
		want    []string
		removed []string
	}{
		{"session and desktop", false,
			[]string{"DISPLAY=:0", "WAYLAND_DISPLAY=wayland-0", "XAUTHORITY=/x", "SSH_AUTH_SOCK=/s", "GPG_AGENT_INFO=/g",
				"DBUS_SESSION_BUS_ADDRESS=unix:path=/b", "TMUX=/t", "TMUX_PANE=%1", "XDG_SESSION_ID=1", "XDG_SESSION_TYPE=x11",
				"XDG_CURRENT_DESKTOP=GNOME", "INVOCATION_ID=i", "MANAGERPID=1", "SYSTEMD_EXEC_PID=2", "LISTEN_FDS=1", "LISTEN_PID=3",
				"HOME=/h", "ANTHROPIC_API_KEY=k", "MY_VAR=v", "TERM=xterm"},
			[]string{"HOME=/h", "ANTHROPIC_API_KEY=k", "MY_VAR=v", "TERM=xterm"},
			[]string{"DBUS_SESSION_BUS_ADDRESS", "DISPLAY", "GPG_AGENT_INFO", "INVOCATION_ID", "LISTEN_FDS", "LISTEN_PID", "MANAGERPID",
				"SSH_AUTH_SOCK", "SYSTEMD_EXEC_PID", "TMUX", "TMUX_PANE", "WAYLAND_DISPLAY", "XAUTHORITY", "XDG_CURRENT_DESKTOP",
				"XDG_SESSION_ID", "XDG_SESSION_TYPE"}},
		{"systemd keeps the runtime dir for systemd-run, not the bus", true,
			[]string{"XDG_RUNTIME_DIR=/run/user/1", "DBUS_SESSION_BUS_ADDRESS=unix:path=/b", "DISPLAY=:0", "A=b"},
			[]string{"XDG_RUNTIME_DIR=/run/user/1", "A=b"},
			[]string{"DBUS_SESSION_BUS_ADDRESS", "DISPLAY", "XDG_RUNTIME_DIR"}},
		{"prefixes: TMUX* goes, XDG_SESSION_* only with the underscore", false,
			[]string{"TMUXINATOR_CONFIG=/c", "XDG_SESSIONS=1", "MY_DISPLAY=2"},
			[]string{"XDG_SESSIONS=1", "MY_DISPLAY=2"},
			[]string{"TMUXINATOR_CONFIG"}},
		{"malformed entries dropped", false, []string{"=x", "NOEQUALS", "A=1=2"}, []string{"A=1=2"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(tt.in)
			removed := e.scrub(tt.systemd)
			if diff := cmp.Diff(tt.want, e.list()); diff != "" {
				t.Errorf("scrubbed env mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.removed, removed); diff != "" {
				t.Errorf("removed mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// The environment the chain gets carries what Build sets.
func TestBuildEnv(t *testing.T) {
	l, err := Build(debianHost(), baseSpec())
	if err != nil {
		t.Fatal(err)
	}
	env := envMap(l.Env)
	want := map[string]string{
		"PATH": "/opt/claude/bin:/usr/bin:/bin:/usr/sbin:/sbin", "XDG_DATA_DIRS": "/usr/share",
		"DISABLE_UPDATES": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_INSTALLATION_CHECKS": "1",
		"ANTHROPIC_API_KEY": "sk-test", "MY_OWN": "kept", "HOME": "/home/u", "SHELL": "/bin/bash",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("env %s = %q, want %q", k, env[k], v)
		}
	}
	for _, k := range []string{"DISPLAY", "SSH_AUTH_SOCK", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", "TMUX", "PWD"} {
		if _, ok := env[k]; ok {
			t.Errorf("env %s present, want removed", k)
		}
	}
}

func TestQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "''"}, {"abc", "abc"}, {"/a/b-c_d.e", "/a/b-c_d.e"}, {"a b", "'a b'"}, {"it's", `'it'\''s'`},
		{"$HOME", "'$HOME'"}, {"a\nb", "'a\nb'"}, {"--x=y", "--x=y"},
	}
	for _, tt := range tests {
		if got := quote(tt.in); got != tt.want {
			t.Errorf("quote(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// TestLinksOutsideWritableDirsAreFollowed: a symlink the user made in a place
// the sandbox cannot write (here ~/.opam -> elsewhere, and the merged-/usr
// links) is not refused.
func TestLinksOutsideWritableDirsAreFollowed(t *testing.T) {
	h := debianHost()
	h.files["/home/u/.npm-global"] = "/home/u/other"
	s := baseSpec()
	s.Config = parseConfig(t, s, "rw ~/.npm-global\nro /lib/x86_64 /opt/x\nro ~/.opam ~/.opam")
	h.files["/usr/lib/x86_64"] = "d"
	if _, err := Build(h, s); err != nil {
		t.Fatalf("Build = %v, want no error", err)
	}
}

// The chain runs on the host: loader and libc variables, from the user's
// environment or the config, never reach it; they reach the sandbox through
// bwrap --setenv. The config's unsetenv removes a variable from the chain
// too (the sandbox can read bwrap's environment in /proc/1/environ).
func TestChainEnvScrubbed(t *testing.T) {
	s := baseSpec()
	s.Environ = append(append([]string(nil), baseEnv...),
		"LD_PRELOAD=/home/u/p/evil.so", "LD_LIBRARY_PATH=/home/u/p", "LD_AUDIT=/x.so", "GCONV_PATH=/home/u/p",
		"MALLOC_TRACE=/x", "GLIBC_TUNABLES=glibc.rtld.x=1", "LOCPATH=/x", "NLSPATH=/x", "TZDIR=/x", "LC_ALL=de_DE.UTF-8")
	s.Config = parseConfig(t, s, "setenv LD_PRELOAD /home/u/p/evil2.so\nsetenv LD_LIBRARY_PATH /home/u/p\nsetenv GCONV_PATH /x\nsetenv EDITOR vi\nunsetenv ANTHROPIC_API_KEY\n")
	l, err := Build(debianHost(), s)
	if err != nil {
		t.Fatal(err)
	}
	env := envMap(l.Env)
	for _, k := range []string{"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "GCONV_PATH", "MALLOC_TRACE", "GLIBC_TUNABLES", "LOCPATH", "NLSPATH", "TZDIR", "EDITOR", "ANTHROPIC_API_KEY"} {
		if v, ok := env[k]; ok {
			t.Errorf("chain env has %s=%q", k, v)
		}
	}
	if env["LC_ALL"] != "C" {
		t.Errorf("chain LC_ALL = %q, want C", env["LC_ALL"])
	}
	// Inside, in order: the user's loader variables, LC_ALL restored,
	// then the config's.
	var inside []string
	for _, o := range l.Plan.Ops {
		switch o.Kind {
		case bwrap.Setenv:
			inside = append(inside, o.Src+"="+o.Dest)
		case bwrap.Unsetenv:
			inside = append(inside, "-"+o.Dest)
		}
	}
	want := []string{"XDG_RUNTIME_DIR=/run/user/1000",
		"LD_PRELOAD=/home/u/p/evil.so", "LD_LIBRARY_PATH=/home/u/p", "LD_AUDIT=/x.so", "GCONV_PATH=/home/u/p",
		"MALLOC_TRACE=/x", "GLIBC_TUNABLES=glibc.rtld.x=1", "LOCPATH=/x", "NLSPATH=/x", "TZDIR=/x", "LC_ALL=de_DE.UTF-8",
		"PATH=/opt/claude/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
		"LD_PRELOAD=/home/u/p/evil2.so", "LD_LIBRARY_PATH=/home/u/p", "GCONV_PATH=/x", "EDITOR=vi", "-ANTHROPIC_API_KEY"}
	if d := cmp.Diff(want, inside); d != "" {
		t.Errorf("inside environment ops (-want +got):\n%s", d)
	}
}

func TestLoaderVar(t *testing.T) {
	for name, want := range map[string]bool{
		"LD_PRELOAD": true, "LD_LIBRARY_PATH": true, "LD_ANYTHING": true, "MALLOC_ARENA_MAX": true,
		"GCONV_PATH": true, "GLIBC_TUNABLES": true, "HOSTALIASES": true, "RES_OPTIONS": true, "TMPDIR": true,
		"PATH": false, "HOME": false, "OLD_LD_PRELOAD": false, "LANG": false, "LC_ALL": false,
	} {
		if got := LoaderVar(name); got != want {
			t.Errorf("LoaderVar(%q) = %v, want %v", name, got, want)
		}
	}
}

// envMap is environ as a map of name to value.
func envMap(environ []string) map[string]string {
	env := map[string]string{}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}
