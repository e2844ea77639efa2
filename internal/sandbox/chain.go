package sandbox

import "path/filepath"

// chainFacts is what the chain phase decided that later phases use.
type chainFacts struct {
	// systemd: systemd-run heads the chain.
	systemd bool
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
	return chainFacts{systemd: systemd, netnsActive: netnsActive, netns: netns}, nil
}

func firstExisting(h Host, paths ...string) string {
	for _, p := range paths {
		if _, err := h.Stat(p); err == nil {
			return p
		}
	}
	return ""
}
