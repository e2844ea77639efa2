package sandbox

import (
	"fmt"
	"slices"

	"github.com/claude-sandbox/claude-sandbox/internal/nsname"
	"github.com/claude-sandbox/claude-sandbox/internal/sandboxcfg"
)

// NetworkFacts is what the launcher read about the network namespaces,
// beyond what Host shows.
type NetworkFacts struct {
	// Whitelist are the names netns-enter's whitelist lists.
	Whitelist []string
	// HostNetwork: the user asked for the host's network
	// (--sandbox-network=host).
	HostNetwork bool
	// Up reports whether /run/netns/NAME is a mounted namespace (not a
	// stale file); nil: its existence is enough.
	Up func(name string) bool
	// Policy describes the namespace's policy in a few words ("" unknown).
	Policy func(name string) string
}

// ErrNetnsDown is the refusal to start when the namespace the whitelist
// promises is not up.
type ErrNetnsDown struct{ Name string }

func (e *ErrNetnsDown) Error() string {
	return fmt.Sprintf("network namespace %s is not up: sudo systemctl start netns@%s (or, to run in the host's network, claude --sandbox-network=host)", e.Name, e.Name)
}

// network decides the network namespace: NAME-UID (s.Netns with the
// caller's uid) where that exists and is whitelisted, else NAME. It fails
// closed: when netns-enter is installed and the whitelist names the
// namespace, a namespace that is not up is an error, never the host's
// network, unless the user asked for that.
func (l *Launch) network(h Host, s Spec) (active bool, name string, err error) {
	f := s.Network
	hostNet := f.HostNetwork
	args, _, err := l.setting(h, s, sandboxcfg.Network, nil)
	if err != nil {
		return false, "", err
	}
	if args != nil {
		hostNet = args[0] == "host"
	}
	if hostNet {
		l.Notes = append(l.Notes, "network: the host's, as asked (--sandbox-network=host or network host)")
		return false, "", nil
	}
	listed := func(n string) bool { return slices.Contains(f.Whitelist, n) }
	up := func(n string) bool {
		if _, err := h.Stat(nsname.Path(n)); err != nil {
			return false
		}
		return f.Up == nil || f.Up(n)
	}
	name = nsname.ForUser(s.Netns, s.UID, func(own string) bool { return listed(own) && up(own) })
	_, enterErr := h.Stat(s.NetnsEnter)
	switch {
	case !up(name) && enterErr == nil && listed(name):
		return false, "", &ErrNetnsDown{Name: name}
	case !up(name):
		l.Notices = append(l.Notices, fmt.Sprintf("not using network namespacing: namespace %s is not active", name))
		return false, "", nil
	case enterErr != nil:
		l.Notices = append(l.Notices, fmt.Sprintf("not using network namespacing: %s is not installed: run make install-network", s.NetnsEnter))
		return false, "", nil
	}
	l.NetnsEnter = []string{s.NetnsEnter, name, "--"}
	note := "network: in namespace " + name
	if f.Policy != nil {
		if p := f.Policy(name); p != "" {
			note += ", " + p
		}
	}
	l.Notes = append(l.Notes, note)
	return true, name, nil
}
