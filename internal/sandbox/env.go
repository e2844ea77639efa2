package sandbox

import (
	"sort"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
)

// pathDirs make up PATH inside, where visible.
var pathDirs = []string{"/usr/bin", "/bin", "/usr/sbin", "/sbin"}

// environment scrubs env and sets ours (systemd: systemd-run heads the
// chain), and returns the environment of the chain itself.
func (l *Launch) environment(h Host, s Spec, env *environ, systemd bool) *environ {
	p := &l.Plan
	inRuntime := InsideRuntimeDir(s.UID)

	// The environment: scrub, then set ours.
	l.EnvRemoved = env.scrub(systemd)
	l.scrubTokens(h, s, env)
	path := []string{}
	if _, err := h.Stat(s.BinDir); err == nil {
		path = append(path, s.BinDir)
	}
	for _, d := range pathDirs {
		if l.Visible(h, d) {
			path = append(path, d)
		}
	}
	env.set("PATH", strings.Join(path, ":"))
	env.set("XDG_DATA_DIRS", "/usr/share")
	env.set("DISABLE_UPDATES", "1")
	env.set("DISABLE_AUTOUPDATER", "1")
	env.set("DISABLE_INSTALLATION_CHECKS", "1")
	l.EnvSet = []string{"PATH=" + env.vals["PATH"], "XDG_DATA_DIRS=/usr/share", "DISABLE_UPDATES=1", "DISABLE_AUTOUPDATER=1", "DISABLE_INSTALLATION_CHECKS=1", "XDG_RUNTIME_DIR=" + inRuntime}

	// The chain runs on the host: its environment is the launcher's,
	// scrubbed, without the variables that steer the dynamic loader and
	// libc, and in the C locale (bwrap takes --setenv into its own
	// environment while it parses, and a translated error message would
	// load gconv modules from $GCONV_PATH). Those variables reach the
	// sandbox through bwrap --setenv; so does everything the config sets.
	chain := env.clone()
	for _, k := range env.order {
		if LoaderVar(k) {
			chain.unset(k)
			p.Ops = append(p.Ops, bwrap.Op{Kind: bwrap.Setenv, Src: k, Dest: env.vals[k]})
		}
	}
	if v, ok := env.get("LC_ALL"); ok {
		p.Ops = append(p.Ops, bwrap.Op{Kind: bwrap.Setenv, Src: "LC_ALL", Dest: v})
	} else {
		p.Ops = append(p.Ops, bwrap.Op{Kind: bwrap.Unsetenv, Dest: "LC_ALL"})
	}
	chain.set("LC_ALL", "C")
	return chain
}

// Variables removed from the sandbox's environment: they point at the
// user's session, desktop, agents and service manager, which the sandbox
// must neither see nor try to reach.
var scrubNames = map[string]bool{
	"DBUS_SESSION_BUS_ADDRESS": true, "DBUS_SYSTEM_BUS_ADDRESS": true, "DBUS_STARTER_ADDRESS": true, "DBUS_STARTER_BUS_TYPE": true,
	"DISPLAY": true, "WAYLAND_DISPLAY": true, "WAYLAND_SOCKET": true, "XAUTHORITY": true, "XAUTHLOCALHOSTNAME": true,
	"SSH_AUTH_SOCK": true, "SSH_AGENT_PID": true, "SSH_ASKPASS": true, "SSH_CONNECTION": true, "SSH_CLIENT": true, "SSH_TTY": true,
	"GPG_AGENT_INFO": true, "GNOME_KEYRING_CONTROL": true, "GNOME_KEYRING_PID": true, "KRB5CCNAME": true,
	"STY": true, "WINDOWID": true, "SESSION_MANAGER": true, "DESKTOP_SESSION": true, "DESKTOP_STARTUP_ID": true,
	"XDG_CURRENT_DESKTOP": true, "XDG_SEAT": true, "XDG_VTNR": true, "XDG_SEAT_PATH": true, "XDG_ACTIVATION_TOKEN": true,
	"XDG_RUNTIME_DIR": true, "XDG_DATA_DIRS": true, "XDG_CONFIG_DIRS": true, "XDG_MENU_PREFIX": true,
	"INVOCATION_ID": true, "JOURNAL_STREAM": true, "MANAGERPID": true, "SYSTEMD_EXEC_PID": true, "NOTIFY_SOCKET": true,
	"WATCHDOG_PID": true, "WATCHDOG_USEC": true, "MAINPID": true,
	"AT_SPI_BUS_ADDRESS": true, "PULSE_SERVER": true, "PIPEWIRE_REMOTE": true,
	"I3SOCK": true, "SWAYSOCK": true, "HYPRLAND_INSTANCE_SIGNATURE": true, "NIRI_SOCKET": true,
	"KITTY_LISTEN_ON": true, "KITTY_PUBLIC_KEY": true, "WEZTERM_UNIX_SOCKET": true, "ALACRITTY_SOCKET": true,
	"NVIM": true, "NVIM_LISTEN_ADDRESS": true, "VSCODE_IPC_HOOK_CLI": true, "VSCODE_GIT_IPC_HANDLE": true,
	"VSCODE_GIT_ASKPASS_MAIN": true, "VSCODE_GIT_ASKPASS_NODE": true, "GIT_ASKPASS": true,
	"PWD": true, "OLDPWD": true,
}

var scrubPrefixes = []string{"TMUX", "XDG_SESSION_", "LISTEN_"}

// Scrubbed reports whether the launcher removes the variable name.
func Scrubbed(name string) bool {
	if scrubNames[name] {
		return true
	}
	for _, p := range scrubPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// unsecure are the variables glibc removes for setuid programs (its
// UNSECURE_ENVVARS) beyond the LD_ and MALLOC_ prefixes: they make the
// loader or libc read files a variable names.
var unsecure = map[string]bool{
	"GCONV_PATH": true, "GETCONF_DIR": true, "GLIBC_TUNABLES": true, "HOSTALIASES": true,
	"LOCALDOMAIN": true, "LOCPATH": true, "NIS_PATH": true, "NLSPATH": true,
	"RESOLV_HOST_CONF": true, "RES_OPTIONS": true, "TMPDIR": true, "TZDIR": true,
}

// LoaderVar reports whether name steers the dynamic loader or libc. Such
// variables never reach the chain (systemd-run, netns-enter, bwrap run on
// the host); they are set inside only.
func LoaderVar(name string) bool {
	return unsecure[name] || strings.HasPrefix(name, "LD_") || strings.HasPrefix(name, "MALLOC_")
}

// chainOnly are variables systemd-run needs to reach the user manager; they
// stay in the chain's environment and bwrap replaces them. systemd-run
// --user talks to $XDG_RUNTIME_DIR/systemd/private, so the session bus
// address is not among them: whatever the chain gets, the sandbox can read
// in /proc/1/environ (bwrap is pid 1 there, same uid), --unsetenv or not.
var chainOnly = map[string]bool{"XDG_RUNTIME_DIR": true}

type environ struct {
	order []string
	vals  map[string]string
}

func newEnv(list []string) *environ {
	e := &environ{vals: map[string]string{}}
	for _, kv := range list {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		e.set(k, v)
	}
	return e
}

func (e *environ) clone() *environ {
	c := &environ{order: append([]string(nil), e.order...), vals: make(map[string]string, len(e.vals))}
	for k, v := range e.vals {
		c.vals[k] = v
	}
	return c
}

func (e *environ) get(k string) (string, bool) {
	v, ok := e.vals[k]
	return v, ok
}

func (e *environ) set(k, v string) {
	if _, ok := e.vals[k]; !ok {
		e.order = append(e.order, k)
	}
	e.vals[k] = v
}

func (e *environ) unset(k string) bool {
	if _, ok := e.vals[k]; !ok {
		return false
	}
	delete(e.vals, k)
	for i, n := range e.order {
		if n == k {
			e.order = append(e.order[:i], e.order[i+1:]...)
			break
		}
	}
	return true
}

// scrub removes the scrubbed variables (keeping those systemd-run needs
// when it is used: bwrap removes them) and returns the names removed from
// the sandbox, sorted.
func (e *environ) scrub(systemd bool) []string {
	var removed []string
	for _, k := range append([]string(nil), e.order...) {
		if !Scrubbed(k) {
			continue
		}
		if !systemd || !chainOnly[k] {
			e.unset(k)
		}
		removed = append(removed, k)
	}
	sort.Strings(removed)
	return removed
}

func (e *environ) list() []string {
	out := make([]string, 0, len(e.order))
	for _, k := range e.order {
		out = append(out, k+"="+e.vals[k])
	}
	return out
}
