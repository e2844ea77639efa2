package sandbox

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
	"github.com/claude-sandbox/claude-sandbox/internal/cgroup"
	"github.com/claude-sandbox/claude-sandbox/internal/sandboxcfg"
)

// scopeDefaults are the properties of each sandbox's scope when neither
// the config nor the admin's ceiling limits that kind: within agent.slice
// (install/systemd/agent.slice, whose limits hold for all sandboxes
// together), one sandbox takes at most half the memory and 2048 tasks, so
// a second one keeps room.
var scopeDefaults = map[string]string{
	sandboxcfg.LimitMemory: "MemoryMax=50%",
	sandboxcfg.LimitTasks:  "TasksMax=2048",
}

// DefaultTmpSize is the size of the sandbox's /tmp, a tmpfs, when neither
// the config nor the admin's ceiling gives one; a memory limit smaller
// than twice that halves it, so that a full /tmp leaves the sandbox
// memory to run in.
const DefaultTmpSize = 2 << 30

// scopeProperty names the systemd property of each kind the scope carries.
var scopeProperty = map[string]string{
	sandboxcfg.LimitMemory: "MemoryMax",
	sandboxcfg.LimitTasks:  "TasksMax",
	sandboxcfg.LimitCPU:    "CPUQuota",
}

// NoBudgetNotice is what the launcher says when neither a user manager nor
// a delegated cgroup can hold the sandbox's budget; the doctor says the
// same.
const NoBudgetNotice = "budget: none: no systemd user manager answers and no cgroup v2 subtree is delegated to you, so the sandbox runs without limits on memory, processes and CPU; to have them, start claude in a login session with a user manager (systemctl --user status; loginctl enable-linger for ssh without a session), or have a cgroup v2 subtree delegated to you (docs/launcher.md, Budgets)"

// cgroupDefaultTasks is the default of pids.max in a delegated cgroup, as
// scopeDefaults' TasksMax is in a scope.
const cgroupDefaultTasks = 2048

// limitLine is a limit directive that holds now.
type limitLine struct {
	value uint64
	line  int
}

// budgetRequest is what the config's limit and budget lines ask for,
// the last line of each kind winning.
type budgetRequest struct {
	limits   map[string]limitLine
	optional bool
}

// addLimit records a limit or budget directive whose conditions hold.
func (l *Launch) addLimit(d sandboxcfg.Directive) error {
	if d.Name == sandboxcfg.Budget {
		l.budget.optional = d.Args[0] == sandboxcfg.BudgetOptional
		return nil
	}
	n, err := sandboxcfg.ParseLimit(d.Args[0], d.Args[1])
	if err != nil {
		return fmt.Errorf("limit %s: %w", d.Args[0], err)
	}
	if l.budget.limits == nil {
		l.budget.limits = map[string]limitLine{}
	}
	l.budget.limits[d.Args[0]] = limitLine{n, d.Line}
	return nil
}

// UserControllers is the file that lists the cgroup controllers the
// user's manager may use (cgroup v2): what its scopes can be limited by.
func UserControllers(uid int) string {
	return fmt.Sprintf("/sys/fs/cgroup/user.slice/user-%d.slice/user@%d.service/cgroup.controllers", uid, uid)
}

// controllerOf is the cgroup controller that enforces each scope property.
var controllerOf = map[string]string{
	sandboxcfg.LimitMemory: "memory",
	sandboxcfg.LimitTasks:  "pids",
	sandboxcfg.LimitCPU:    "cpu",
}

// budgets decides the sandbox's budget: each kind from the config's last
// limit line that holds, else the admin's ceiling, else the default; a
// request above the ceiling refuses the start. Memory, tasks and CPU
// become properties of the scope when the user manager has the cgroup
// controller that enforces them; a limit that nothing would enforce
// refuses the start unless the config says `budget optional`. /tmp is a
// tmpfs of the tmp limit's size (DefaultTmpSize, or half a smaller memory
// limit, by default), unless CLAUDE_SBX_TMP names a directory and no
// limit tmp holds.
func (l *Launch) budgets(h Host, s Spec, systemd bool, systemdVersion int) error {
	// Why a scope property would not hold, "" when it would.
	unenforced := map[string]string{}
	// Without a user manager, a cgroup v2 subtree delegated to the user
	// holds the budget: the sandbox runs in a child of it (l.Cgroup).
	delegated := !systemd && s.Cgroup.Dir != ""
	if !systemd {
		for k, c := range controllerOf {
			switch {
			case !delegated && s.Cgroup.Why != "":
				unenforced[k] = "no systemd user manager answers and " + s.Cgroup.Why
			case !delegated:
				unenforced[k] = "no systemd user manager answers"
			case !s.Cgroup.Has(c):
				unenforced[k] = fmt.Sprintf("no systemd user manager answers, and the cgroup delegated to you has no %s controller for its children (%s)", c, path.Join(cgroup.Root, s.Cgroup.Dir, "cgroup.subtree_control"))
			}
		}
	} else {
		file := UserControllers(s.UID)
		b, err := h.ReadFile(file, MaxGitFile)
		have := map[string]bool{}
		for _, c := range strings.Fields(string(b)) {
			have[c] = true
		}
		for k, c := range controllerOf {
			switch {
			case err != nil:
				unenforced[k] = fmt.Sprintf("the user manager has no cgroup v2 controllers (%s: cannot read it: cgroup v1?)", file)
			case !have[c]:
				unenforced[k] = fmt.Sprintf("the user manager's cgroup has no %s controller (%s)", c, file)
			}
		}
	}
	var props, shown, unheld []string
	switch {
	case systemd && systemdVersion >= oomPolicyScopes:
		// An OOM kill of one of the sandbox's processes ends them all
		// (memory.oom.group), and nothing outside the scope.
		props = append(props, "OOMPolicy=kill")
		shown = append(shown, "oom: the OOM killer ends all of the sandbox's processes at once, none outside it (OOMPolicy=kill)")
	case systemd:
		// An older manager refuses the property, and the scope with it.
		shown = append(shown, fmt.Sprintf("oom: an OOM kill ends the process it picks only: OOMPolicy needs systemd %d or later for a scope (found: %s)", oomPolicyScopes, versionName(systemdVersion)))
	}
	unheldLine, why := 0, ""
	var memory uint64 // the memory limit in bytes, 0 if none
	// The delegated cgroup's limits, by kind.
	own := map[string]uint64{}
	for _, kind := range sandboxcfg.LimitKinds {
		req, asked := l.budget.limits[kind]
		ceil, capped := s.Ceiling[kind]
		var value uint64
		var from string
		switch {
		case asked && capped && req.value > ceil:
			return &sandboxcfg.Error{Name: s.ConfigName, Line: req.line, Msg: fmt.Sprintf(
				"limit %s %s is above the ceiling %s set in %s: ask for at most %s",
				kind, sandboxcfg.FormatLimit(kind, req.value), sandboxcfg.FormatLimit(kind, ceil), s.CeilingName, sandboxcfg.FormatLimit(kind, ceil))}
		case asked:
			value, from = req.value, fmt.Sprintf("%s:%d", s.ConfigName, req.line)
		case capped:
			value, from = ceil, s.CeilingName
		}
		if kind == sandboxcfg.LimitMemory {
			memory = value
		}
		if kind == sandboxcfg.LimitTmp {
			if value == 0 && s.Tmp != "" {
				shown = append(shown, "tmp: the directory "+quote(s.Tmp)+" (CLAUDE_SBX_TMP), bounded only by its file system")
				continue
			}
			if value == 0 {
				value, from = DefaultTmpSize, "default"
				if memory != 0 && memory < 2*value {
					value, from = memory/2, "default: half the memory limit"
				}
			}
			if !l.sizeTmp(s, value) {
				return fmt.Errorf("limit tmp: the plan has no /tmp to size")
			}
			shown = append(shown, fmt.Sprintf("tmp: a tmpfs of %s (%s)", sandboxcfg.FormatLimit(kind, value), from))
			continue
		}
		switch {
		case unenforced[kind] != "":
			if value != 0 {
				unheld = append(unheld, kind)
				if why == "" {
					why = unenforced[kind]
				}
				if asked && (unheldLine == 0 || req.line < unheldLine) {
					unheldLine = req.line
				}
				shown = append(shown, fmt.Sprintf("%s %s (%s): not enforced: %s", kind, sandboxcfg.FormatLimit(kind, value), from, unenforced[kind]))
			} else if systemd || delegated {
				shown = append(shown, fmt.Sprintf("%s: no limit: %s", kind, unenforced[kind]))
			}
		case value != 0 && delegated:
			own[kind] = value
			shown = append(shown, fmt.Sprintf("%s %s (%s)", kind, sandboxcfg.FormatLimit(kind, value), from))
		case value != 0:
			props = append(props, fmt.Sprintf("%s=%s", scopeProperty[kind], systemdValue(kind, value)))
			shown = append(shown, fmt.Sprintf("%s %s (%s)", kind, sandboxcfg.FormatLimit(kind, value), from))
		case delegated && kind == sandboxcfg.LimitTasks:
			own[kind] = cgroupDefaultTasks
			shown = append(shown, fmt.Sprintf("tasks %d (default)", cgroupDefaultTasks))
		case delegated && kind == sandboxcfg.LimitMemory && s.MemTotal != 0:
			own[kind] = s.MemTotal / 2
			memory = own[kind]
			shown = append(shown, fmt.Sprintf("memory %s: half the machine's (default)", sandboxcfg.FormatLimit(kind, own[kind])))
		case delegated:
			shown = append(shown, kind+": no limit of its own (default)")
		case scopeDefaults[kind] != "":
			props = append(props, scopeDefaults[kind])
			shown = append(shown, fmt.Sprintf("%s %s of the machine (default)", kind, strings.SplitN(scopeDefaults[kind], "=", 2)[1]))
		default:
			shown = append(shown, kind+": no limit of its own (default)")
		}
	}
	if len(unheld) > 0 && !l.budget.optional {
		if unheldLine == 0 {
			return fmt.Errorf("%s limits %s, but %s: the sandbox cannot have its budget: start claude in a login session with a user manager on cgroup v2, or write `budget optional` in %s to start without the limits", s.CeilingName, strings.Join(unheld, ", "), why, s.ConfigName)
		}
		return &sandboxcfg.Error{Name: s.ConfigName, Line: unheldLine, Msg: fmt.Sprintf(
			"limit %s: %s, so the sandbox cannot have its budget; start claude in a login session with a user manager on cgroup v2, or write `budget optional` to start without the limits", strings.Join(unheld, ", "), why)}
	}
	if delegated {
		p := cgroup.NewPlan(s.Cgroup, own[sandboxcfg.LimitMemory], own[sandboxcfg.LimitTasks], own[sandboxcfg.LimitCPU])
		l.Cgroup = &p
		l.Notes = append(l.Notes, "budget: no systemd user manager: the sandbox runs in a cgroup of its own, made below "+quote(p.Parent)+" (delegated to you) and removed when it ends")
	}
	if !systemd && !delegated {
		l.notice(NoBudgetNotice)
	} else {
		for _, k := range sandboxcfg.LimitKinds {
			if r := unenforced[k]; r != "" {
				l.notice("budget: partial: " + r + ": the sandbox runs without the limits that need it (claude --sandbox-dry-run lists them)")
				break
			}
		}
	}
	l.SystemdRun = withProperties(l.SystemdRun, props)
	for _, sh := range shown {
		l.Notes = append(l.Notes, "budget: "+sh)
	}
	if systemd {
		l.Notes = append(l.Notes, "budget: the scope's limits hold within agent.slice's, which every sandbox shares (systemctl --user show agent.slice)")
	}
	return nil
}

// oomPolicyScopes is the first systemd whose scopes take OOMPolicy
// (NEWS of 252: "scope units now also provide oom-kill status").
const oomPolicyScopes = 252

func versionName(v int) string {
	if v == 0 {
		return "no libsystemd-shared"
	}
	return "systemd " + strconv.Itoa(v)
}

// systemdValue writes a value as systemd-run -p takes it.
func systemdValue(kind string, n uint64) string {
	if kind == sandboxcfg.LimitCPU {
		return fmt.Sprintf("%d%%", n)
	}
	return fmt.Sprintf("%d", n)
}

// withProperties adds -p PROP to a ScopeCommand before its --.
func withProperties(cmd, props []string) []string {
	if len(props) == 0 || len(cmd) == 0 || cmd[len(cmd)-1] != "--" {
		return cmd
	}
	out := append([]string(nil), cmd[:len(cmd)-1]...)
	for _, p := range props {
		out = append(out, "-p", p)
	}
	return append(out, "--")
}

// sizeTmp gives the tmpfs at /tmp (mounts.go) its size in bytes, or
// replaces the bind of the directory CLAUDE_SBX_TMP names with such a
// tmpfs, in its place among the mounts. Its pages are charged to the
// scope's memory.
func (l *Launch) sizeTmp(s Spec, size uint64) bool {
	for i, o := range l.Plan.Ops {
		if o.Dest == "/tmp" && (o.Kind == bwrap.Tmpfs || o.Kind == bwrap.Bind && o.Src == s.Tmp) {
			l.Plan.Ops[i] = bwrap.Op{Kind: bwrap.Tmpfs, Dest: "/tmp", Size: size}
			return true
		}
	}
	return false
}
