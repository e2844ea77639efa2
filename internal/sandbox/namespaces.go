package sandbox

import "github.com/claude-sandbox/claude-sandbox/internal/bwrap"

// Hostname is the sandbox's hostname: its own UTS namespace keeps the
// host's name (which anything inside could read) out, and names in prompts
// and logs show where a command ran.
const Hostname = "claude-sandbox"

// Namespaces returns the namespace options of every sandbox, and nothing
// else: the plan that Build starts from, and the one that bwrap.Probe (the
// launcher's AppArmor check, claude-sandbox doctor) runs `true` in.
func Namespaces() bwrap.Plan {
	return bwrap.Plan{
		Unshare:       []string{"user", "pid", "ipc", "uts", "cgroup"},
		DisableUserns: true,
		DieWithParent: true,
		Hostname:      Hostname,
		SeccompFD:     -1,
	}
}
