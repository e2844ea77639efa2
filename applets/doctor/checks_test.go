package doctor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"path"
	"strconv"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/bindir"
	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
	"github.com/claude-sandbox/claude-sandbox/internal/cgroup"
	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/sandbox"
	"github.com/claude-sandbox/claude-sandbox/internal/toolchain"
)

// fakeHost is a machine made of tables.
type fakeHost struct {
	t         *testing.T
	files     map[string]string
	stats     map[string]FileInfo
	links     map[string]string
	cmds      map[string]Output // by argv joined with spaces
	env       map[string]string
	reachable map[string]bool
	trust     error // TrustBinDir's answer
	uid       int
	user      string
	bwrap     string // "" for none found
	tree      toolchain.Host
	usage     map[string]int64 // DiskUsage by directory
	cgroup    cgroup.Delegation
}

func (h *fakeHost) Cgroup() cgroup.Delegation { return h.cgroup }

func (h *fakeHost) ReadFile(p string) ([]byte, error) {
	if v, ok := h.files[p]; ok {
		return []byte(v), nil
	}
	return nil, fs.ErrNotExist
}

func (h *fakeHost) Stat(p string) (FileInfo, error) {
	if v, ok := h.stats[p]; ok {
		return v, nil
	}
	return FileInfo{}, fs.ErrNotExist
}

func (h *fakeHost) Readlink(p string) (string, error) {
	if v, ok := h.links[p]; ok {
		return v, nil
	}
	return "", fs.ErrNotExist
}

func (h *fakeHost) Run(_ context.Context, argv ...string) Output {
	k := strings.Join(argv, " ")
	if o, ok := h.cmds[k]; ok {
		return o
	}
	h.t.Errorf("unexpected command %q", k)
	return Output{Err: errors.New("unexpected command")}
}

func (h *fakeHost) Reachable(s string) bool { return h.reachable[s] }
func (h *fakeHost) Getenv(k string) string  { return h.env[k] }
func (h *fakeHost) UID() int                { return h.uid }
func (h *fakeHost) User() string            { return h.user }

func (h *fakeHost) FindBwrap() (string, error) {
	if h.bwrap == "" {
		return "", errors.New("bwrap not found")
	}
	return h.bwrap, nil
}

// SHA256 hashes the file's content in files.
func (h *fakeHost) SHA256(p string) (string, int64, error) {
	v, ok := h.files[p]
	if !ok {
		return "", 0, fs.ErrNotExist
	}
	sum := sha256.Sum256([]byte(v))
	return hex.EncodeToString(sum[:]), int64(len(v)), nil
}

// AgentState parses the state file in files with claude-update's parser.
func (h *fakeHost) AgentState(dir string) (*bindir.State, error) {
	p := path.Join(dir, bindir.StateName)
	v, ok := h.files[p]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
	}
	st, err := bindir.ParseState([]byte(v))
	if err != nil {
		return nil, fmt.Errorf("%s is damaged (%v)", p, err)
	}
	return st, nil
}

func (h *fakeHost) TrustBinDir(string) error { return h.trust }
func (h *fakeHost) Tree() toolchain.Host     { return h.tree }

func (h *fakeHost) DiskUsage(dir string) (int64, error) {
	if n, ok := h.usage[dir]; ok {
		return n, nil
	}
	return 0, &fs.PathError{Op: "lstat", Path: dir, Err: fs.ErrNotExist}
}

const (
	bin       = "/opt/claude/bin/claude.2.1.0"
	stateFile = "/opt/claude/bin/.claude-update.state"
	agentText = "#!/bin/sh\necho '2.1.0 (Claude Code)'\n"
	// agentSum is the SHA-256 of agentText.
	agentSum = "207f5ff5b936e4829031a0274689ef903b8240410feb95f8bbf8103aa7af1e63"
)

// stateText is .claude-update.state as claude-update writes it after
// installing 2.1.0 (and, before it, 2.0.9) from the release source.
func stateText(sum string, size int, hold string) string {
	return `{
  "versions": {
    "2.0.9": {
      "sha256": "` + strings.Repeat("9", 64) + `",
      "size": 1000,
      "source": "release https://downloads.claude.ai/claude-code-releases (signed manifest)"
    },
    "2.1.0": {
      "sha256": "` + sum + `",
      "size": ` + strconv.Itoa(size) + `,
      "source": "release https://downloads.claude.ai/claude-code-releases (signed manifest)"
    }
  },
  "highest": "2.1.0",
  "buildDate": "2026-11-20T10:00:00Z"` + hold + `
}
`
}

var testConfig = Config{
	Netns:          "agents",
	NetnsDir:       "/run/netns",
	ResolvConf:     "/etc/netns/agents/resolv.conf",
	NetnsEnter:     "/usr/local/bin/netns-enter",
	NetnsSetup:     "/usr/local/bin/netns-setup",
	Whitelist:      "/usr/local/etc/netns-enter",
	FirewallConfig: "/usr/local/etc/netns-firewall.conf",
	BinDir:         "/opt/claude/bin",
	HomeName:       ".claude-home",
	Self:           "/usr/local/bin/claude-sandbox",
	DNSName:        "api.anthropic.com",
}

func probeKey() string {
	return strings.Join(append([]string{"/usr/bin/bwrap"}, bwrap.ProbeArgs(sandbox.Namespaces())...), " ")
}

const (
	sliceKey     = "/usr/bin/systemd-run --user --scope --slice=agent --quiet -- true"
	budgetKey    = "/usr/bin/systemctl --user show -p FragmentPath -p MemoryHigh -p MemoryMax -p TasksMax -p CPUWeight -p IOWeight agent.slice"
	sliceShown   = "FragmentPath=/usr/local/lib/systemd/user/agent.slice\nMemoryHigh=18446744073\nMemoryMax=20876364595\nTasksMax=4096\nCPUWeight=50\nIOWeight=50\n"
	enterKey     = "/usr/local/bin/netns-enter agents -- true"
	dnsKey       = "/usr/local/bin/netns-enter agents -- /usr/local/bin/claude-sandbox doctor --resolve-with /etc/netns/agents/resolv.conf --dns-name api.anthropic.com"
	rootDNSKey   = "/usr/sbin/ip netns exec agents /usr/local/bin/claude-sandbox doctor --resolve-with /etc/netns/agents/resolv.conf --dns-name api.anthropic.com"
	statusKey    = "/usr/local/bin/netns-setup status agents"
	statusUp     = "namespace agents\n  firewall  table inet claude_sandbox: present\n  state     up\n"
	profileText  = "abi <abi/4.0>,\nprofile claude-sandbox-bwrap /usr/bin/bwrap flags=(attach_disconnected) {\n}\n"
	loadedHealth = "claude-sandbox-bwrap (enforce)\nclaude-sandbox-bwrap-child (enforce)\nunprivileged_userns (enforce)\n"
)

// healthy is an Ubuntu-like machine, fully installed, seen by alice; root
// sees it with root's commands.
func healthy(t *testing.T, root bool) *fakeHost {
	h := &fakeHost{
		t: t,
		files: map[string]string{
			bwrap.SysctlUsernsClone:         "1\n",
			bwrap.SysctlMaxUserns:           "63000\n",
			bwrap.SysctlAppArmor:            "1\n",
			bwrap.AppArmorProfilePath:       profileText,
			procStatus:                      "Name:\tdoctor\nSeccomp:\t0\nSeccomp_filters:\t0\n",
			seccompActions:                  "kill_process kill_thread trap errno user_notif trace log allow\n",
			testConfig.Whitelist:            "# netns-enter whitelist\nagents\n",
			testConfig.FirewallConfig:       "# allowlist\nallow 192.168.1.10 tcp 443\n",
			bin:                             agentText,
			stateFile:                       stateText(agentSum, len(agentText), ""),
			"/etc/netns/agents/resolv.conf": "nameserver 10.10.0.1\n",
		},
		stats: map[string]FileInfo{
			"/usr/bin/bwrap":       {Mode: 0o755},
			testConfig.NetnsEnter:  {Mode: fs.ModeSetuid | 0o755},
			testConfig.NetnsSetup:  {Mode: 0o755},
			"/run/netns/agents":    {Mode: 0o444},
			"/usr/bin/systemd-run": {Mode: 0o755},
			"/usr/bin/systemctl":   {Mode: 0o755},
			"/usr/sbin/ip":         {Mode: 0o755},
			testConfig.BinDir:      {Mode: fs.ModeDir | 0o755},
			bin:                    {Mode: 0o755},
		},
		links: map[string]string{"/opt/claude/bin/claude": "claude.2.1.0"},
		cmds: map[string]Output{
			"/usr/bin/bwrap --version": {Stdout: "bubblewrap 0.9.0\n"},
			probeKey():                 {},
			sliceKey:                   {},
			budgetKey:                  {Stdout: sliceShown},
			enterKey:                   {},
			dnsKey:                     {Stdout: "160.79.104.10 via 10.10.0.1:53\n"},
		},
		env:       map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000", "HOME": "/home/alice"},
		usage:     map[string]int64{"/home/alice/.claude-homes": 3 << 30, "/home/alice/.claude-home": 1},
		reachable: map[string]bool{"/run/user/1000/systemd/private": true},
		uid:       1000,
		user:      "alice",
		bwrap:     "/usr/bin/bwrap",
	}
	if root {
		h.uid, h.user = 0, "root"
		h.env = map[string]string{}
		h.files[apparmorProfiles] = loadedHealth
		h.cmds = map[string]Output{
			"/usr/bin/bwrap --version": {Stdout: "bubblewrap 0.9.0\n"},
			statusKey:                  {Stdout: statusUp},
			rootDNSKey:                 {Stdout: "160.79.104.10 via 10.10.0.1:53\n"},
		}
	}
	return h
}

// TestHealthy: a healthy machine has no FAIL and no warning beyond root's
// note; every line that is not ok says how to make it ok.
func TestHealthy(t *testing.T) {
	for _, root := range []bool{false, true} {
		res := Run(context.Background(), healthy(t, root), testConfig)
		if len(res) != len(checks) {
			t.Fatalf("root=%v: %d results for %d checks", root, len(res), len(checks))
		}
		for _, r := range res {
			want := OK
			if root && r.Check == "user" {
				want = Warn
			}
			if root && (r.Check == "toolchains" || r.Check == "sandbox-probe" || r.Check == "systemd-user" || r.Check == "agent-slice" || r.Check == "budget" || r.Check == "sandbox-homes" || r.Check == "whitelist") {
				want = Skip
			}
			if !root && r.Check == "firewall" {
				want = Skip
			}
			if r.Status != want {
				t.Errorf("root=%v: %s = %s %q, want %s", root, r.Check, r.Status, r.Message, want)
			}
			if (r.Status == OK) != (r.Fix == "") {
				t.Errorf("root=%v: %s %s has fix %q", root, r.Check, r.Status, r.Fix)
			}
		}
		if Failed(res) {
			t.Errorf("root=%v: Failed = true", root)
		}
	}
}

// TestChecks breaks one condition at a time and asserts that check's line.
func TestChecks(t *testing.T) {
	tests := []struct {
		name   string
		root   bool
		breakf func(h *fakeHost)
		check  string
		status Status
		msg    string // substring of the message
		fix    string // the exact fix
	}{
		{"userns_clone off", false, func(h *fakeHost) { h.files[bwrap.SysctlUsernsClone] = "0\n" },
			"userns-clone", Fail, "kernel.unprivileged_userns_clone = 0", "sudo sysctl -w kernel.unprivileged_userns_clone=1"},
		{"userns_clone absent", false, func(h *fakeHost) { delete(h.files, bwrap.SysctlUsernsClone) },
			"userns-clone", OK, "not in this kernel", ""},
		{"max_user_namespaces zero", false, func(h *fakeHost) { h.files[bwrap.SysctlMaxUserns] = "0\n" },
			"max-userns", Fail, "user.max_user_namespaces = 0", "sudo sysctl -w user.max_user_namespaces=16384"},
		{"apparmor restricted, no profile", false, func(h *fakeHost) { delete(h.files, bwrap.AppArmorProfilePath) },
			"apparmor", Fail, "/etc/apparmor.d/claude-sandbox-bwrap is not installed",
			"sudo make install (in the claude-sandbox source tree: it installs and loads /etc/apparmor.d/claude-sandbox-bwrap)"},
		{"apparmor profile for another bwrap", false, func(h *fakeHost) {
			h.bwrap = "/usr/local/bin/bwrap"
			h.stats["/usr/local/bin/bwrap"] = FileInfo{Mode: 0o755}
			h.cmds[h.bwrap+" --version"] = Output{Stdout: "bubblewrap 0.11.0\n"}
			h.cmds[strings.Replace(probeKey(), "/usr/bin/bwrap", h.bwrap, 1)] = Output{}
		},
			"apparmor", Fail, "is for another bwrap than /usr/local/bin/bwrap",
			"sudo make install BWRAP=/usr/local/bin/bwrap (/etc/apparmor.d/claude-sandbox-bwrap is for another bwrap)"},
		{"apparmor profile not loaded", true, func(h *fakeHost) { h.files[apparmorProfiles] = "unprivileged_userns (enforce)\n" },
			"apparmor", Fail, "installed but not loaded", "sudo apparmor_parser -r /etc/apparmor.d/claude-sandbox-bwrap"},
		{"apparmor package profile too", true, func(h *fakeHost) {
			h.files[apparmorProfiles] = loadedHealth + "bwrap (enforce)\nunpriv_bwrap (enforce)\n"
		},
			"apparmor", Warn, "the apparmor package's bwrap", "sudo aa-disable /etc/apparmor.d/bwrap-userns-restrict"},
		{"apparmor global switch off", false, func(h *fakeHost) { h.files[bwrap.SysctlAppArmor] = "0\n"; delete(h.files, bwrap.AppArmorProfilePath) },
			"apparmor", OK, "off for every program", ""},
		{"no apparmor", false, func(h *fakeHost) { delete(h.files, bwrap.SysctlAppArmor) },
			"apparmor", OK, "no AppArmor user namespace restriction", ""},
		{"bwrap missing", false, func(h *fakeHost) { h.bwrap = "" },
			"bwrap", Fail, "bwrap not found", "sudo apt-get install bubblewrap (Fedora: dnf install bubblewrap; Arch: pacman -S bubblewrap)"},
		{"bwrap setuid", false, func(h *fakeHost) { h.stats["/usr/bin/bwrap"] = FileInfo{Mode: fs.ModeSetuid | 0o755} },
			"bwrap", Fail, "/usr/bin/bwrap is setuid root", "sudo chmod u-s /usr/bin/bwrap"},
		{"bwrap too old", false, func(h *fakeHost) { h.cmds["/usr/bin/bwrap --version"] = Output{Stdout: "bubblewrap 0.6.2\n"} },
			"bwrap", Fail, "is bubblewrap 0.6.2: 0.8.0 or newer is needed", "sudo apt-get install --only-upgrade bubblewrap"},
		{"probe skipped without bwrap", false, func(h *fakeHost) { h.bwrap = "" },
			"sandbox-probe", Skip, "no usable bwrap", "see the bwrap line"},
		{"probe blocked by apparmor", false, func(h *fakeHost) {
			h.cmds[probeKey()] = Output{Code: 1, Stderr: "bwrap: setting up uid map: Permission denied\n"}
		}, "sandbox-probe", Fail, "AppArmor keeps bwrap from setting up its user namespace: bwrap: setting up uid map: Permission denied",
			"sudo apparmor_parser -r /etc/apparmor.d/claude-sandbox-bwrap"},
		{"probe fails otherwise", false, func(h *fakeHost) {
			h.cmds[probeKey()] = Output{Code: 1, Stderr: "bwrap: Can't mount proc on /newroot/proc: Operation not permitted\n"}
		}, "sandbox-probe", Fail, "Can't mount proc", "run it to see: " + probeKey()},
		{"no seccomp", false, func(h *fakeHost) { h.files[procStatus] = "Name:\tdoctor\n" },
			"seccomp", Fail, "this kernel has no seccomp", "boot a kernel built with CONFIG_SECCOMP_FILTER=y (every distribution kernel is)"},
		{"seccomp without kill_process", false, func(h *fakeHost) { h.files[seccompActions] = "kill_thread trap errno trace allow\n" },
			"seccomp", Fail, "lacks the kill_process action", "boot Linux 4.14 or newer"},
		{"no XDG_RUNTIME_DIR", false, func(h *fakeHost) { h.env = map[string]string{} },
			"systemd-user", Warn, "XDG_RUNTIME_DIR is not set", "log in through a PAM session (sudo apt-get install libpam-systemd), or: sudo loginctl enable-linger alice"},
		{"user manager not answering", false, func(h *fakeHost) { h.reachable = nil },
			"systemd-user", Warn, "no systemd user manager answers at /run/user/1000/systemd/private", "sudo loginctl enable-linger alice"},
		{"no systemd-run", false, func(h *fakeHost) { delete(h.stats, "/usr/bin/systemd-run") },
			"systemd-user", Warn, "systemd-run is not installed", "sudo apt-get install systemd"},
		{"scope fails", false, func(h *fakeHost) {
			h.cmds[sliceKey] = Output{Code: 1, Stderr: "Failed to start transient scope unit: Access denied\n"}
		}, "agent-slice", Fail, "Access denied", "run it to see: " + sliceKey + "; then: systemctl --user status agent.slice"},
		{"budget healthy", false, func(h *fakeHost) {}, "budget", OK,
			"agent.slice from /usr/local/lib/systemd/user/agent.slice: MemoryHigh=18446744073 MemoryMax=20876364595 TasksMax=4096 CPUWeight=50 IOWeight=50", ""},
		{"budget without user manager", false, func(h *fakeHost) {
			h.reachable = map[string]bool{}
			h.cgroup = cgroup.Delegation{Why: "no cgroup v2 hierarchy at /sys/fs/cgroup (cgroup v1?)"}
		}, "budget", Warn, "no systemd user manager, and no cgroup v2 hierarchy at /sys/fs/cgroup (cgroup v1?): the sandbox runs without a budget", "see the systemd-user line, or have a cgroup v2 subtree delegated to you (docs/launcher.md, Budgets)"},
		{"budget in a delegated cgroup", false, func(h *fakeHost) {
			h.reachable = map[string]bool{}
			h.cgroup = cgroup.Delegation{Dir: "box/alice", Controllers: []string{"cpu", "memory", "pids"}}
		}, "budget", OK, "no systemd user manager; the sandbox runs in a cgroup of its own below /sys/fs/cgroup/box/alice (delegated to you), with the memory, pids and cpu controllers", ""},
		{"budget in a delegated cgroup without controllers", false, func(h *fakeHost) {
			h.reachable = map[string]bool{}
			h.cgroup = cgroup.Delegation{Dir: "box/alice", Controllers: []string{"memory"}}
		}, "budget", Warn, "whose children have no pids, cpu controller", "enable them for its children: echo '+pids +cpu' > /sys/fs/cgroup/box/alice/cgroup.subtree_control"},
		{"budget without slice file", false, func(h *fakeHost) {
			h.cmds[budgetKey] = Output{Stdout: "FragmentPath=\nMemoryHigh=infinity\nMemoryMax=infinity\nTasksMax=infinity\nCPUWeight=[not set]\nIOWeight=[not set]\n"}
		}, "budget", Warn, "agent.slice has no unit file", installSlice},
		{"budget slice without limits", false, func(h *fakeHost) {
			h.cmds[budgetKey] = Output{Stdout: "FragmentPath=/etc/systemd/user/agent.slice\nMemoryHigh=infinity\nMemoryMax=infinity\nTasksMax=infinity\nCPUWeight=[not set]\nIOWeight=[not set]\n"}
		}, "budget", Warn, "agent.slice from /etc/systemd/user/agent.slice has no memory or task limit", installSlice},
		{"homes size", false, func(h *fakeHost) {}, "sandbox-homes", OK,
			"the sandbox homes use 3073M (/home/alice/.claude-homes 3G, /home/alice/.claude-home 1M)", ""},
		{"homes too large", false, func(h *fakeHost) { h.usage["/home/alice/.claude-homes"] = 11 << 30 },
			"sandbox-homes", Warn, "use 11265M (/home/alice/.claude-homes 11G, /home/alice/.claude-home 1M), more than 10G: they are bounded only by their file system",
			"remove what the agent no longer needs (du -sh ~/.claude-homes/*), or ask the admin for a disk quota"},
		{"no homes yet", false, func(h *fakeHost) { h.usage = nil }, "sandbox-homes", OK, "no sandbox home yet", ""},
		{"netns-enter not setuid", false, func(h *fakeHost) { h.stats[testConfig.NetnsEnter] = FileInfo{Mode: 0o755} },
			"netns-enter", Fail, "is not setuid", "sudo chmod 4755 /usr/local/bin/netns-enter"},
		{"netns-enter not root's", false, func(h *fakeHost) { h.stats[testConfig.NetnsEnter] = FileInfo{Mode: fs.ModeSetuid | 0o755, UID: 1000} },
			"netns-enter", Fail, "owned by uid 1000", "sudo chown root:root /usr/local/bin/netns-enter && sudo chmod 4755 /usr/local/bin/netns-enter"},
		{"netns-enter group-writable", false, func(h *fakeHost) { h.stats[testConfig.NetnsEnter] = FileInfo{Mode: fs.ModeSetuid | 0o775} },
			"netns-enter", Fail, "writable by others", "sudo chmod 4755 /usr/local/bin/netns-enter"},
		{"netns-enter missing", false, func(h *fakeHost) { delete(h.stats, testConfig.NetnsEnter) },
			"netns-enter", Fail, "is not installed", "sudo make install-network"},
		{"network part not installed", false, func(h *fakeHost) {
			delete(h.stats, testConfig.NetnsEnter)
			delete(h.stats, testConfig.NetnsSetup)
			delete(h.stats, "/run/netns/agents")
		}, "netns-enter", Warn, "the network part is not installed: the sandbox shares the host's network", "sudo make install-network && sudo systemctl enable --now systemd-networkd netns@agents.service"},
		{"network part not installed, later lines", false, func(h *fakeHost) {
			delete(h.stats, testConfig.NetnsEnter)
			delete(h.stats, testConfig.NetnsSetup)
			delete(h.stats, "/run/netns/agents")
		}, "dns", Skip, "the network part is not installed", "see the netns-enter line"},
		// netns-enter's refusals: the doctor goes by the exit status
		// (multicall's contract) and shows the last line, whatever it says.
		{"not in the whitelist", false, func(h *fakeHost) {
			h.cmds[enterKey] = Output{Code: multicall.ExitNotListed, Stderr: "netns-enter: refusal one, in any words\n"}
		}, "whitelist", Fail, "refusal one, in any words", "echo agents | sudo tee -a /usr/local/etc/netns-enter"},
		{"not in the group", false, func(h *fakeHost) {
			h.files[testConfig.Whitelist] = "# comment\nother @wheel\nagents\t@sbx-users # the sandbox users\n"
			h.cmds[enterKey] = Output{Code: multicall.ExitNotMember, Stderr: "netns-enter: refusal two\n"}
		}, "whitelist", Fail, "refusal two", "sudo usermod -aG sbx-users alice (then log in again)"},
		{"not in the group, whitelist unreadable", false, func(h *fakeHost) {
			h.cmds[enterKey] = Output{Code: multicall.ExitNotMember, Stderr: "netns-enter: refusal two\n"}
		}, "whitelist", Fail, "refusal two", "sudo usermod -aG GROUP alice (then log in again)"},
		{"whitelist missing", false, func(h *fakeHost) {
			h.cmds[enterKey] = Output{Code: multicall.ExitNoWhitelist, Stderr: "netns-enter: refusal three\n"}
		}, "whitelist", Fail, "refusal three", "sudo make install-network"},
		{"helper not setuid, as netns-enter says", false, func(h *fakeHost) {
			h.cmds[enterKey] = Output{Code: multicall.ExitNotSetuid, Stderr: "netns-enter: refusal four\n"}
		}, "whitelist", Fail, "refusal four", "sudo chmod 4755 /usr/local/bin/netns-enter"},
		{"no_new_privs", false, func(h *fakeHost) {
			h.cmds[enterKey] = Output{Code: multicall.ExitNoNewPrivs, Stderr: "netns-enter: refusal five\n"}
		}, "whitelist", Fail, "refusal five", "run claude-sandbox doctor outside the sandbox"},
		{"whitelist malformed", false, func(h *fakeHost) {
			h.cmds[enterKey] = Output{Code: multicall.ExitFailure, Stderr: "netns-enter: whitelist /usr/local/etc/netns-enter:3: want NAME or NAME @GROUP, got 3 fields\n"}
		}, "whitelist", Fail, "netns-enter: whitelist /usr/local/etc/netns-enter:3", "see DIAGNOSTICS in netns-enter(8)"},
		{"failure that names a refusal's words", false, func(h *fakeHost) {
			h.cmds[enterKey] = Output{Code: multicall.ExitFailure, Stderr: "netns-enter: namespace agents is not active, is not in the whitelist\n"}
		}, "whitelist", Fail, "netns-enter: namespace agents is not active, is not in the whitelist", "see DIAGNOSTICS in netns-enter(8)"},
		{"whitelist without the name, as root", true, func(h *fakeHost) { h.files[testConfig.Whitelist] = "other\n" },
			"whitelist", Fail, "does not name agents", "echo agents | sudo tee -a /usr/local/etc/netns-enter"},
		{"namespace down", false, func(h *fakeHost) {
			delete(h.stats, "/run/netns/agents")
			h.cmds[enterKey] = Output{Code: multicall.ExitNotActive, Stderr: "netns-enter: refusal six\n"}
		}, "namespace", Fail, "namespace agents is not active", "sudo systemctl enable --now netns@agents.service"},
		{"namespace not judged when netns-enter refuses", false, func(h *fakeHost) {
			h.cmds[enterKey] = Output{Code: multicall.ExitNotListed, Stderr: "netns-enter: refusal one\n"}
		}, "namespace", Skip, "/run/netns/agents exists; netns-enter did not get in", "see the whitelist line"},
		{"whitelist ok although namespace down", false, func(h *fakeHost) {
			delete(h.stats, "/run/netns/agents")
			h.cmds[enterKey] = Output{Code: multicall.ExitNotActive, Stderr: "netns-enter: refusal six\n"}
		}, "whitelist", OK, "admits alice to agents", ""},
		{"namespace half up, as root", true, func(h *fakeHost) {
			h.cmds[statusKey] = Output{Code: 1, Stdout: "namespace agents\n  firewall  table inet claude_sandbox: present\n",
				Stderr: "netns-setup: namespace agents is not up (missing: resolv.conf): systemctl restart netns@agents, or netns-setup up agents\n"}
		}, "namespace", Fail, "missing: resolv.conf", "sudo systemctl restart netns@agents.service (without systemd: sudo netns-setup up agents)"},
		{"firewall table missing, as root", true, func(h *fakeHost) {
			h.cmds[statusKey] = Output{Code: 1, Stdout: "namespace agents\n  firewall  table inet claude_sandbox: missing\n", Stderr: "netns-setup: namespace agents is not up (missing: firewall)\n"}
		}, "firewall", Fail, "table inet claude_sandbox is missing", "sudo systemctl restart netns@agents.service"},
		{"firewall needs root", false, func(h *fakeHost) {},
			"firewall", Skip, "visible to root only", "sudo claude-sandbox doctor"},
		{"dns fails", false, func(h *fakeHost) {
			h.cmds[dnsKey] = Output{Code: 1, Stderr: "doctor: resolve api.anthropic.com at 10.10.0.1:53: i/o timeout\n"}
		}, "dns", Fail, "api.anthropic.com does not resolve inside agents: doctor: resolve api.anthropic.com at 10.10.0.1:53: i/o timeout",
			"check the nameserver in /etc/netns/agents/resolv.conf (sudo systemctl restart netns@agents.service rewrites it; netns-dns answers there: systemctl status netns-dns; refused names: sudo netns-setup denials agents)"},
		{"dns fails, as root", true, func(h *fakeHost) {
			h.cmds[rootDNSKey] = Output{Code: 1, Stderr: "doctor: resolve api.anthropic.com at 10.10.0.1:53: server misbehaving\n"}
		}, "dns", Fail, "server misbehaving", "check the nameserver in /etc/netns/agents/resolv.conf (sudo systemctl restart netns@agents.service rewrites it; netns-dns answers there: systemctl status netns-dns; refused names: sudo netns-setup denials agents)"},
		{"dns without ip(8), as root", true, func(h *fakeHost) { delete(h.stats, "/usr/sbin/ip") },
			"dns", Skip, "ip(8) is not installed", "sudo apt-get install iproute2"},
		{"dns skipped when the namespace is down", false, func(h *fakeHost) { delete(h.stats, "/run/netns/agents") },
			"dns", Skip, "not up", "see the namespace line"},
		{"policy line broken", false, func(h *fakeHost) { h.files[testConfig.FirewallConfig] = "allow 192.168.1.10 tcp\n" },
			"policy", Fail, "/usr/local/etc/netns-firewall.conf:1:", "fix that line, then: sudo systemctl restart netns@agents.service"},
		{"policy file missing", false, func(h *fakeHost) { delete(h.files, testConfig.FirewallConfig) },
			"policy", Warn, "is missing", "sudo make install-network (installs the default: policy allowlist, presets claude-code and dev)"},
		{"agent missing", false, func(h *fakeHost) { h.links = nil },
			"agent", Fail, "/opt/claude/bin/claude is not installed", "sudo claude-update"},
		{"agent dangling", false, func(h *fakeHost) { delete(h.stats, bin) },
			"agent", Fail, "which is missing", "sudo claude-update --force"},
		{"agent writable by a user", false, func(h *fakeHost) { h.stats[bin] = FileInfo{Mode: 0o755, UID: 1000} },
			"agent", Fail, "anyone who can write it controls every sandbox", "sudo chown root:root " + bin + " && sudo chmod 0755 " + bin},
		{"agent world-writable", false, func(h *fakeHost) { h.stats[bin] = FileInfo{Mode: 0o757} },
			"agent", Fail, "mode 0757", "sudo chown root:root " + bin + " && sudo chmod 0755 " + bin},
		{"agent version", false, func(h *fakeHost) {},
			"agent", OK, "/opt/claude/bin/claude -> claude.2.1.0 (version 2.1.0)", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := healthy(t, tt.root)
			tt.breakf(h)
			res := Run(context.Background(), h, testConfig)
			var got *Result
			for i := range res {
				if res[i].Check == tt.check {
					got = &res[i]
				}
			}
			if got == nil {
				t.Fatalf("no %s line in %v", tt.check, res)
			}
			if got.Status != tt.status || !strings.Contains(got.Message, tt.msg) || got.Fix != tt.fix {
				t.Fatalf("%s = %s %q fix %q\nwant %s containing %q fix %q", tt.check, got.Status, got.Message, got.Fix, tt.status, tt.msg, tt.fix)
			}
			if Failed(res) != (tt.status == Fail) && tt.status == Fail {
				t.Errorf("Failed = false with a FAIL line")
			}
		})
	}
}

// TestAgentLines breaks the bin directory, the agent's binary and
// claude-update's record of it one at a time and asserts the whole line.
func TestAgentLines(t *testing.T) {
	hash := func(s string) string { sum := sha256.Sum256([]byte(s)); return hex.EncodeToString(sum[:]) }
	evil := agentText + "# evil\n"
	evilSum := hash(evil)
	eval := strings.Replace(agentText, "echo", "eval", 1)
	evalSum := hash(eval)
	if hash(agentText) != agentSum {
		t.Fatalf("agentSum is not the SHA-256 of agentText")
	}
	tests := []struct {
		name   string
		root   bool
		breakf func(h *fakeHost)
		check  string
		line   string // as Write prints it
	}{
		{"bin dir unsafe", false, func(h *fakeHost) {
			h.trust = &bindir.UntrustedError{Dir: "/opt/claude/bin", Path: "/opt/claude", Problem: "is owned by uid 1000, not root",
				Advice: "set CLAUDE_SBX_BINDIR to a directory that root owns and only root can write, in directories likewise (such as /opt/claude/bin)"}
		},
			"bin-dir", "FAIL  bin-dir       /opt/claude is owned by uid 1000, not root: whoever can change it chooses what every sandbox runs, and claude-update refuses it; fix: set CLAUDE_SBX_BINDIR to a directory that root owns and only root can write, in directories likewise (such as /opt/claude/bin)"},
		{"bin dir not checkable", false, func(h *fakeHost) { h.trust = errors.New("bin dir opt/claude/bin is not an absolute path") },
			"bin-dir", "FAIL  bin-dir       bin dir opt/claude/bin is not an absolute path; fix: set CLAUDE_SBX_BINDIR to a directory that root owns and only root can write (such as /opt/claude/bin)"},
		{"bin dir missing", false, func(h *fakeHost) { delete(h.stats, testConfig.BinDir); h.links = nil },
			"bin-dir", "skip  bin-dir       /opt/claude/bin does not exist; fix: see the agent line"},
		{"bin dir safe", false, func(h *fakeHost) {},
			"bin-dir", "ok    bin-dir       /opt/claude/bin and the directories above it are root's and writable by no one else"},
		{"agent changed after verification", false, func(h *fakeHost) { h.files[bin] = evil },
			"agent-hash", "FAIL  agent-hash    /opt/claude/bin/claude.2.1.0 has SHA-256 " + evilSum + " (44 bytes), but /opt/claude/bin/.claude-update.state records " + agentSum + " (37 bytes): the binary changed after claude-update verified it; fix: sudo claude-update --force 2.1.0"},
		{"agent changed, same length", false, func(h *fakeHost) { h.files[bin] = eval },
			"agent-hash", "FAIL  agent-hash    /opt/claude/bin/claude.2.1.0 has SHA-256 " + evalSum + " (37 bytes), but /opt/claude/bin/.claude-update.state records " + agentSum + " (37 bytes): the binary changed after claude-update verified it; fix: sudo claude-update --force 2.1.0"},
		{"agent truncated, size recorded", false, func(h *fakeHost) { h.files[stateFile] = stateText(agentSum, len(agentText)+1, "") },
			"agent-hash", "FAIL  agent-hash    /opt/claude/bin/claude.2.1.0 has SHA-256 " + agentSum + " (37 bytes), but /opt/claude/bin/.claude-update.state records " + agentSum + " (38 bytes): the binary changed after claude-update verified it; fix: sudo claude-update --force 2.1.0"},
		{"no state file", false, func(h *fakeHost) { delete(h.files, stateFile) },
			"agent-hash", "warn  agent-hash    no /opt/claude/bin/.claude-update.state: nothing records that claude-update verified claude.2.1.0 (installed by hand or by an older claude-update); fix: sudo claude-update 2.1.0 (verifies it again and records it)"},
		{"no record of the current version", false, func(h *fakeHost) {
			h.links["/opt/claude/bin/claude"] = "claude.2.1.1"
			h.stats["/opt/claude/bin/claude.2.1.1"] = FileInfo{Mode: 0o755}
			h.files["/opt/claude/bin/claude.2.1.1"] = agentText
		},
			"agent-hash", "warn  agent-hash    /opt/claude/bin/.claude-update.state has no record of 2.1.1: nothing says claude-update verified claude.2.1.1; fix: sudo claude-update 2.1.1 (verifies it again and records it)"},
		{"state file damaged", false, func(h *fakeHost) { h.files[stateFile] = `{"versions":{"2.1.0":{"sha256":"abc","size":3}}}` },
			"agent-hash", "FAIL  agent-hash    /opt/claude/bin/.claude-update.state is damaged (record of 2.1.0: bad sha256 or size); fix: sudo mv /opt/claude/bin/.claude-update.state /opt/claude/bin/.claude-update.state.damaged && sudo claude-update 2.1.0"},
		{"current not a claude-update binary", false, func(h *fakeHost) {
			h.links["/opt/claude/bin/claude"] = "/usr/local/bin/claude-real"
			h.stats["/usr/local/bin/claude-real"] = FileInfo{Mode: 0o755}
		},
			"agent-hash", "warn  agent-hash    /opt/claude/bin/claude points to /usr/local/bin/claude-real, not to a claude.VERSION that claude-update installed: nothing records its hash; fix: sudo claude-update"},
		{"verified", false, func(h *fakeHost) {},
			"agent-hash", "ok    agent-hash    claude.2.1.0 matches the SHA-256 claude-update verified (from release https://downloads.claude.ai/claude-code-releases (signed manifest))"},
		{"verified and held", false, func(h *fakeHost) {
			h.files[stateFile] = stateText(agentSum, len(agentText), `,
  "hold": "2.1.0"`)
		},
			"agent-hash", "ok    agent-hash    claude.2.1.0 matches the SHA-256 claude-update verified (from release https://downloads.claude.ai/claude-code-releases (signed manifest)); held at 2.1.0 (sudo claude-update --unhold follows the channel again)"},
		{"held at another version", true, func(h *fakeHost) {
			h.files[stateFile] = stateText(agentSum, len(agentText), `,
  "hold": "2.0.9"`)
		},
			"agent-hash", "ok    agent-hash    claude.2.1.0 matches the SHA-256 claude-update verified (from release https://downloads.claude.ai/claude-code-releases (signed manifest)); held at 2.0.9 (sudo claude-update --unhold follows the channel again)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := healthy(t, tt.root)
			tt.breakf(h)
			res := Run(context.Background(), h, testConfig)
			var got []Result
			for _, r := range res {
				if r.Check == tt.check {
					got = append(got, r)
				}
			}
			if len(got) != 1 {
				t.Fatalf("%d %s lines in %v", len(got), tt.check, res)
			}
			var b strings.Builder
			if err := Write(&b, got, false); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.line+"\n" {
				t.Errorf("%s line =\n%s\nwant\n%s", tt.check, b.String(), tt.line)
			}
			if strings.HasPrefix(tt.line, "FAIL") && !Failed(res) {
				t.Errorf("Failed = false with a FAIL line")
			}
		})
	}
}

func TestWrite(t *testing.T) {
	res := []Result{
		{Check: "bwrap", Status: OK, Message: "/usr/bin/bwrap: bubblewrap 0.9.0, not setuid"},
		{Check: "netns-enter", Status: Fail, Message: "/usr/local/bin/netns-enter is not setuid", Fix: "sudo chmod 4755 /usr/local/bin/netns-enter"},
	}
	var b strings.Builder
	if err := Write(&b, res, false); err != nil {
		t.Fatal(err)
	}
	want := "ok    bwrap         /usr/bin/bwrap: bubblewrap 0.9.0, not setuid\n" +
		"FAIL  netns-enter   /usr/local/bin/netns-enter is not setuid; fix: sudo chmod 4755 /usr/local/bin/netns-enter\n"
	if b.String() != want {
		t.Errorf("Write text =\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := Write(&b, res, true); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"ok": false`, `"check": "netns-enter"`, `"status": "FAIL"`, `"fix": "sudo chmod 4755 /usr/local/bin/netns-enter"`} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("Write json lacks %s:\n%s", w, b.String())
		}
	}
}

func TestNameserver(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"first wins", "# x\nsearch lan\nnameserver 10.10.0.1\nnameserver 1.1.1.1\n", "10.10.0.1"},
		{"ipv6", "nameserver ::1\n", "::1"},
		{"bad then good", "nameserver nope\nnameserver 9.9.9.9\n", "9.9.9.9"},
		{"none", "search lan\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, ok := Nameserver([]byte(tt.in))
			got := ""
			if ok {
				got = a.String()
			}
			if got != tt.want {
				t.Errorf("Nameserver(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestConfigEnv(t *testing.T) {
	env := map[string]string{"CLAUDE_SBX_NETNS": "work", "CLAUDE_SBX_BINDIR": "/srv/claude/bin"}
	c, err := config(func(k string) string { return env[k] }, DefaultDNSName)
	if err != nil {
		t.Fatal(err)
	}
	if c.Netns != "work" || c.BinDir != "/srv/claude/bin" || c.ResolvConf != "/etc/netns/work/resolv.conf" {
		t.Errorf("config = %+v", c)
	}
	env["CLAUDE_SBX_NETNS"] = "../x"
	if _, err := config(func(k string) string { return env[k] }, DefaultDNSName); err == nil {
		t.Error("config accepted CLAUDE_SBX_NETNS=../x")
	}
}

// FuzzNameserver: any resolv.conf gives the address of its first
// nameserver line that has one, or none.
func FuzzNameserver(f *testing.F) {
	f.Add("nameserver 10.10.0.1\n")
	f.Add("# x\nnameserver ::1%eth0\nnameserver 1.1.1.1\n")
	f.Add("nameserver\nnameserver bad\n")
	f.Fuzz(func(t *testing.T, in string) {
		a, ok := Nameserver([]byte(in))
		var want netip.Addr
		found := false
		for _, l := range strings.Split(in, "\n") {
			if f := strings.Fields(l); !found && len(f) >= 2 && f[0] == "nameserver" {
				want, found = parseAddr(f[1])
			}
		}
		if ok != found || a != want {
			t.Errorf("Nameserver(%q) = %v, %v; want %v, %v", in, a, ok, want, found)
		}
	})
}

func parseAddr(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	return a, err == nil
}

func TestLastLine(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{"one\n", "one"},
		{"warning: first\nnetns-enter: the error\n", "netns-enter: the error"},
		{"a\nb\n\n  \n", "b"},
	} {
		if got := lastLine(tt.in); got != tt.want {
			t.Errorf("lastLine(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
