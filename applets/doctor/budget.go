package doctor

import (
	"fmt"
	"path"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/cgroup"
	"github.com/claude-sandbox/claude-sandbox/internal/quote"
	"github.com/claude-sandbox/claude-sandbox/internal/sandbox"
	"github.com/claude-sandbox/claude-sandbox/internal/sandboxcfg"
)

// systemctlPaths are where systemctl is looked for: fixed system paths.
var systemctlPaths = []string{"/usr/bin/systemctl", "/bin/systemctl"}

// sliceProps are the properties of agent.slice the budget check shows.
var sliceProps = []string{"MemoryHigh", "MemoryMax", "TasksMax", "CPUWeight", "IOWeight"}

// installSlice is the fix for a missing or stale agent.slice.
const installSlice = "sudo make install (it installs agent.slice in PREFIX/lib/systemd/user), then: systemctl --user daemon-reload"

// checkBudget checks the limits all sandboxes share: agent.slice as the
// user manager has loaded it. Without a user manager the sandbox runs
// without a budget.
func checkBudget(s *state) Result {
	r := Result{Check: "budget", Status: Warn}
	if s.root {
		r.Status, r.Message = Skip, "the budget is the user's"
		r.Fix = fixAsUser
		return r
	}
	dir := s.h.Getenv("XDG_RUNTIME_DIR")
	sc := s.firstExisting(systemctlPaths...)
	switch {
	case !path.IsAbs(dir) || !s.h.Reachable(sandbox.UserManagerSocket(dir)) || s.firstExisting(systemdRun...) == "":
		return delegatedBudget(s, r)
	case sc == "":
		r.Status, r.Message, r.Fix = Skip, "systemctl is not installed", "sudo apt-get install systemd"
		return r
	}
	argv := []string{sc, "--user", "show", "-p", "FragmentPath"}
	for _, p := range sliceProps {
		argv = append(argv, "-p", p)
	}
	argv = append(argv, "agent.slice")
	out := s.run(argv...)
	if out.Err != nil || out.Code != 0 {
		r.Message = "cannot read agent.slice: " + errText(out)
		r.Fix = "run it to see: " + strings.Join(argv, " ")
		return r
	}
	props := map[string]string{}
	for _, l := range strings.Split(out.Stdout, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			props[k] = v
		}
	}
	if props["FragmentPath"] == "" {
		r.Message = "agent.slice has no unit file: the sandboxes together have no limits beyond each one's scope"
		r.Fix = installSlice
		return r
	}
	var shown []string
	for _, p := range sliceProps {
		shown = append(shown, p+"="+props[p])
	}
	if props["MemoryMax"] == "infinity" || props["TasksMax"] == "infinity" {
		r.Message = fmt.Sprintf("agent.slice from %s has no memory or task limit: %s", props["FragmentPath"], strings.Join(shown, " "))
		r.Fix = installSlice
		return r
	}
	r.Status, r.Message = OK, fmt.Sprintf("agent.slice from %s: %s", props["FragmentPath"], strings.Join(shown, " "))
	return r
}

// delegatedBudget checks the budget without a user manager: the cgroup v2
// subtree delegated to the user, where the launcher makes each sandbox's
// cgroup, as the launcher finds it (cgroup.ForSelf).
func delegatedBudget(s *state, r Result) Result {
	d := s.h.Cgroup()
	if d.Dir == "" {
		r.Message = "no systemd user manager, and " + d.Why + ": the sandbox runs without a budget (no limits on memory, processes and CPU); limit lines refuse the start unless the config says budget optional"
		r.Fix = "see the systemd-user line, or have a cgroup v2 subtree delegated to you (docs/launcher.md, Budgets)"
		return r
	}
	dir := path.Join(cgroup.Root, d.Dir)
	var missing []string
	for _, c := range []string{"memory", "pids", "cpu"} {
		if !d.Has(c) {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		r.Message = fmt.Sprintf("no systemd user manager; the sandbox runs in a cgroup below %s (delegated to you), whose children have no %s controller: no limit of those kinds", quote.String(dir), strings.Join(missing, ", "))
		r.Fix = fmt.Sprintf("enable them for its children: echo '+%s' > %s", strings.Join(missing, " +"), path.Join(dir, "cgroup.subtree_control"))
		return r
	}
	r.Status, r.Message = OK, fmt.Sprintf("no systemd user manager; the sandbox runs in a cgroup of its own below %s (delegated to you), with the memory, pids and cpu controllers", quote.String(dir))
	return r
}

// homesWarn is the size of the sandbox homes above which the doctor
// warns: they are directories in the user's home, with no quota of their
// own.
const homesWarn = 10 << 30

// checkHomes reports the size of the sandbox homes, which grow with what
// the agent writes and are bounded only by the file system they are on.
func checkHomes(s *state) Result {
	r := Result{Check: "sandbox-homes", Status: OK}
	if s.root {
		r.Status, r.Message = Skip, "the sandbox homes are the user's"
		r.Fix = fixAsUser
		return r
	}
	home := s.h.Getenv("HOME")
	if !path.IsAbs(home) || s.c.HomeName == "" {
		r.Status, r.Message, r.Fix = Skip, "HOME is not set", "run the doctor from a login shell"
		return r
	}
	var total int64
	var parts []string
	for _, d := range []string{path.Join(home, sandbox.HomesName), path.Join(home, s.c.HomeName)} {
		n, err := s.h.DiskUsage(d)
		if err != nil {
			if !exists(s.h, d) {
				continue
			}
			r.Status, r.Message = Warn, fmt.Sprintf("cannot measure %s: %v", d, err)
			r.Fix = "du -sh " + d
			return r
		}
		total += n
		parts = append(parts, fmt.Sprintf("%s %s", d, sandboxcfg.FormatLimit(sandboxcfg.LimitMemory, roundMiB(n))))
	}
	if len(parts) == 0 {
		r.Message = "no sandbox home yet"
		return r
	}
	r.Message = fmt.Sprintf("the sandbox homes use %s (%s)", sandboxcfg.FormatLimit(sandboxcfg.LimitMemory, roundMiB(total)), strings.Join(parts, ", "))
	if total > homesWarn {
		r.Status = Warn
		r.Message += fmt.Sprintf(", more than %s: they are bounded only by their file system", sandboxcfg.FormatLimit(sandboxcfg.LimitMemory, homesWarn))
		r.Fix = "remove what the agent no longer needs (du -sh ~/" + sandbox.HomesName + "/*), or ask the admin for a disk quota"
	}
	return r
}

// roundMiB rounds n bytes up to whole MiB (at least one), to show.
func roundMiB(n int64) uint64 {
	m := (uint64(n) + 1<<20 - 1) >> 20
	if m == 0 {
		m = 1
	}
	return m << 20
}
