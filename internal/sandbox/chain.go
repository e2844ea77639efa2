package sandbox

import (
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// chainFacts is what the chain phase decided that later phases use.
type chainFacts struct {
	// systemd: systemd-run heads the chain.
	systemd bool
	// systemdVersion is the installed systemd's major version, 0 if
	// unknown (systemdVersion).
	systemdVersion int
	// netnsActive: netns-enter enters the namespace netns.
	netnsActive bool
	netns       string
}

// SystemdRunPaths are where systemd-run is looked for, in order: fixed
// system paths, not $PATH.
func SystemdRunPaths() []string { return []string{"/usr/bin/systemd-run", "/bin/systemd-run"} }

// ScopeCommand is the head of the chain that runs the rest of its command
// line in a scope of the user's agent.slice, given the path of systemd-run:
// the launcher's, and the one the doctor tries.
func ScopeCommand(systemdRun string) []string {
	return []string{systemdRun, "--user", "--scope", "--slice=agent", "--quiet", "--"}
}

// chain decides the prefixes of the chain: systemd-run, when a user
// manager answers, and netns-enter (network.go).
func (l *Launch) chain(h Host, s Spec, env *environ) (chainFacts, error) {
	runtimeDir, _ := env.get("XDG_RUNTIME_DIR")
	systemd := false
	if filepath.IsAbs(runtimeDir) {
		sock := UserManagerSocket(runtimeDir)
		sr := firstExisting(h, SystemdRunPaths()...)
		switch {
		case sr == "":
			l.Notes = append(l.Notes, "systemd: not used: systemd-run is not installed")
		case !h.Reachable(sock):
			l.Notes = append(l.Notes, "systemd: not used: no user manager answers at "+sock)
		default:
			systemd = true
			l.SystemdRun = ScopeCommand(sr)
			l.Notes = append(l.Notes, "systemd: the sandbox runs in a scope of agent.slice")
		}
	} else {
		l.Notes = append(l.Notes, "systemd: not used: XDG_RUNTIME_DIR is not set")
	}
	netnsActive, netns, err := l.network(h, s)
	if err != nil {
		return chainFacts{}, err
	}
	f := chainFacts{systemd: systemd, netnsActive: netnsActive, netns: netns}
	if systemd {
		f.systemdVersion = systemdVersion(h)
	}
	return f, nil
}

// systemdLibs are where systemd's private library lies, named with its
// version (libsystemd-shared-252.so): Debian's multiarch directory, then
// those of Fedora and Arch. Reading a directory costs less than running
// systemd-run --version.
var systemdLibs = []string{
	"/usr/lib/*-linux-gnu*/systemd/libsystemd-shared-*.so",
	"/usr/lib64/systemd/libsystemd-shared-*.so",
	"/usr/lib/systemd/libsystemd-shared-*.so",
}

// systemdVersion is the major version of the installed systemd from the
// name of its private library, the highest if there are several; 0 if
// none is found.
func systemdVersion(h Host) int {
	v := 0
	for _, pat := range systemdLibs {
		m, _ := h.Glob(pat)
		for _, f := range m {
			rest := strings.TrimPrefix(path.Base(f), "libsystemd-shared-")
			end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
			if end < 0 {
				end = len(rest)
			}
			if n, err := strconv.Atoi(rest[:end]); err == nil && n > v {
				v = n
			}
		}
	}
	return v
}

func firstExisting(h Host, paths ...string) string {
	for _, p := range paths {
		if _, err := h.Stat(p); err == nil {
			return p
		}
	}
	return ""
}
