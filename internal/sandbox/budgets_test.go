package sandbox

import (
	"errors"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/cgroup"
	"github.com/claude-sandbox/claude-sandbox/internal/sandboxcfg"
)

const testCeilingName = "/usr/local/etc/claude-sandbox/limits"

// userManager makes the fake host's user manager answer, with the cgroup
// controllers ctrl delegated to it ("" for cgroup v1: no such file).
func userManager(h *fakeHost, ctrl string) {
	h.reachable["/run/user/1000/systemd/private"] = true
	if ctrl == "-" {
		return
	}
	p := UserControllers(1000)
	for d := path.Dir(p); d != "/"; d = path.Dir(d) {
		if _, ok := h.files[d]; !ok {
			h.files[d] = "d"
		}
	}
	h.files[p] = "f"
	h.contents[p] = ctrl + "\n"
}

const allControllers = "cpuset cpu io memory pids"

func TestGoldenBudgets(t *testing.T) {
	tests := []struct {
		name, config string
		systemd      string // the delegated controllers, "-" for none (cgroup v1), "" for no user manager
		ceiling      sandboxcfg.Ceiling
	}{
		{"limits", "limit memory 8G\nlimit tasks 64\nlimit cpu 200%\nlimit tmp 4G", allControllers, nil},
		{"limits-if", "limit memory 8G\nif pwd-under ~/projects\n  limit memory 2G\nend\nif pwd-under ~/other\n  limit tasks 10\nend", allControllers, nil},
		{"ceiling", "limit memory 8G", allControllers, sandboxcfg.Ceiling{sandboxcfg.LimitMemory: 16 << 30, sandboxcfg.LimitCPU: 400, sandboxcfg.LimitTmp: 1 << 30}},
		{"optional-no-systemd", "budget optional\nlimit memory 8G\nlimit tmp 1G", "", nil},
		{"tmp-no-systemd", "limit tmp 512M", "", nil},
		{"cgroup-v1", "", "-", nil},
		{"optional-cgroup-v1", "budget optional\nlimit tasks 64", "-", nil},
		{"no-pids-controller", "limit memory 1G", "cpu memory", nil},
	}
	// Without a user manager, in a cgroup delegated to the user.
	delegated := []struct {
		name, config string
		cgroup       cgroup.Delegation
	}{
		{"delegated", "limit tasks 64\nlimit cpu 150%", cgroup.Delegation{Dir: "box/user", Controllers: []string{"cpu", "memory", "pids"}}},
		{"delegated-no-cpu", "budget optional\nlimit cpu 150%", cgroup.Delegation{Dir: "box/user", Controllers: []string{"memory", "pids"}}},
	}
	for _, tt := range delegated {
		t.Run(tt.name, func(t *testing.T) {
			s := baseSpec()
			s.Cgroup, s.MemTotal = tt.cgroup, 16<<30
			s.Config = parseConfig(t, s, tt.config)
			golden(t, "budget-"+tt.name, dryRun(t, debianHost(), s))
		})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := debianHost()
			if tt.systemd != "" {
				userManager(h, tt.systemd)
			}
			s := baseSpec()
			s.Ceiling, s.CeilingName = tt.ceiling, testCeilingName
			s.Config = parseConfig(t, s, tt.config)
			golden(t, "budget-"+tt.name, dryRun(t, h, s))
		})
	}
}

func TestBudgetRefused(t *testing.T) {
	tests := []struct {
		name, config string
		systemd      string
		ceiling      sandboxcfg.Ceiling
		want         string
		line         bool // a *sandboxcfg.Error, a usage error
	}{
		{"above ceiling", "limit tasks 100\nlimit memory 32G", allControllers, sandboxcfg.Ceiling{sandboxcfg.LimitMemory: 16 << 30},
			"~/.claude-sandbox-init:2: limit memory 32G is above the ceiling 16G set in /usr/local/etc/claude-sandbox/limits: ask for at most 16G", true},
		{"tmp above ceiling", "limit tmp 2G", "", sandboxcfg.Ceiling{sandboxcfg.LimitTmp: 1 << 30},
			"~/.claude-sandbox-init:1: limit tmp 2G is above the ceiling 1G set in /usr/local/etc/claude-sandbox/limits: ask for at most 1G", true},
		{"no user manager", "limit cpu 100%\nlimit memory 1G", "", nil,
			"~/.claude-sandbox-init:1: limit memory, cpu: no systemd user manager answers, so the sandbox cannot have its budget; start claude in a login session with a user manager on cgroup v2, or write `budget optional` to start without the limits", true},
		{"optional then required", "budget optional\nbudget required\nlimit tasks 10", "", nil,
			"~/.claude-sandbox-init:3: limit tasks: no systemd user manager answers, so the sandbox cannot have its budget; start claude in a login session with a user manager on cgroup v2, or write `budget optional` to start without the limits", true},
		{"cgroup v1", "limit memory 1G", "-", nil,
			"~/.claude-sandbox-init:1: limit memory: the user manager has no cgroup v2 controllers (/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/cgroup.controllers: cannot read it: cgroup v1?), so the sandbox cannot have its budget; start claude in a login session with a user manager on cgroup v2, or write `budget optional` to start without the limits", true},
		{"no pids controller", "limit memory 1G\nlimit tasks 10", "cpu memory", nil,
			"~/.claude-sandbox-init:2: limit tasks: the user manager's cgroup has no pids controller (/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/cgroup.controllers), so the sandbox cannot have its budget; start claude in a login session with a user manager on cgroup v2, or write `budget optional` to start without the limits", true},
		{"delegated without the cpu controller", "limit cpu 150%", "delegated memory pids", nil,
			"~/.claude-sandbox-init:1: limit cpu: no systemd user manager answers, and the cgroup delegated to you has no cpu controller for its children (/sys/fs/cgroup/box/user/cgroup.subtree_control), so the sandbox cannot have its budget; start claude in a login session with a user manager on cgroup v2, or write `budget optional` to start without the limits", true},
		{"no delegation", "limit tasks 10", "none", nil,
			"~/.claude-sandbox-init:1: limit tasks: no systemd user manager answers and no cgroup above yours (/box/user/login) is delegated to uid 1000, so the sandbox cannot have its budget; start claude in a login session with a user manager on cgroup v2, or write `budget optional` to start without the limits", true},
		{"ceiling without user manager", "", "", sandboxcfg.Ceiling{sandboxcfg.LimitTasks: 100},
			"/usr/local/etc/claude-sandbox/limits limits tasks, but no systemd user manager answers: the sandbox cannot have its budget: start claude in a login session with a user manager on cgroup v2, or write `budget optional` in ~/.claude-sandbox-init to start without the limits", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := debianHost()
			s := baseSpec()
			switch ctrl, ok := strings.CutPrefix(tt.systemd, "delegated "); {
			case ok:
				s.Cgroup = cgroup.Delegation{Dir: "box/user", Controllers: strings.Fields(ctrl)}
			case tt.systemd == "none":
				s.Cgroup = cgroup.Delegation{Why: "no cgroup above yours (/box/user/login) is delegated to uid 1000"}
			case tt.systemd != "":
				userManager(h, tt.systemd)
			}
			s.Ceiling, s.CeilingName = tt.ceiling, testCeilingName
			s.Config = parseConfig(t, s, tt.config)
			_, err := Build(h, s)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Build = %v, want %s", err, tt.want)
			}
			var ce *sandboxcfg.Error
			if errors.As(err, &ce) != tt.line {
				t.Fatalf("Build = %T, a config line error: %v, want %v", err, !tt.line, tt.line)
			}
		})
	}
}

// TestScopeOOMPolicy: every scope asks systemd to end all of the
// sandbox's processes when the OOM killer takes one of them, whatever
// the config says; a systemd before 252, whose scopes refuse the property
// (and the start with it), is not asked.
func TestScopeOOMPolicy(t *testing.T) {
	const debian = "/usr/lib/x86_64-linux-gnu/systemd/libsystemd-shared-252.so"
	tests := []struct {
		name, ctrl string
		lib        string // the library in place of Debian 12's
		want       bool
	}{
		{"cgroup v2", allControllers, debian, true},
		{"cgroup v1", "-", debian, true},
		{"arch", allControllers, "/usr/lib/systemd/libsystemd-shared-256.7-1-arch.so", true},
		{"ubuntu 22.04", allControllers, "/usr/lib/x86_64-linux-gnu/systemd/libsystemd-shared-249.so", false},
		{"unknown", allControllers, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := debianHost()
			delete(h.files, debian)
			if tt.lib != "" {
				h.files[path.Dir(tt.lib)] = "d"
				h.files[tt.lib] = "f"
			}
			userManager(h, tt.ctrl)
			s := baseSpec()
			s.Config = parseConfig(t, s, "budget optional")
			l, err := Build(h, s)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.Index(l.SystemdRun, "OOMPolicy=kill")
			if got := i > 0 && l.SystemdRun[i-1] == "-p"; got != tt.want || l.SystemdRun[len(l.SystemdRun)-1] != "--" {
				t.Errorf("SystemdRun = %q, want -p OOMPolicy=kill before --: %v", l.SystemdRun, tt.want)
			}
		})
	}
}
