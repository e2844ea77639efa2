package claude

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/buildinfo"
	"github.com/claude-sandbox/claude-sandbox/internal/cgroup"
	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/sandbox"
	"github.com/claude-sandbox/claude-sandbox/internal/sandboxcfg"
)

// decide builds the launch from the inputs (sandbox.Build).
func decide(o options, in inputs) (*sandbox.Launch, error) {
	uid, home, userName, pwd, k := in.uid, in.home, in.userName, in.pwd, in.k
	self, _ := os.Executable()
	var err error
	spec := sandbox.Spec{
		UID: uid, User: userName, Home: home, Pwd: pwd,
		SandboxHome: k.sandboxHome, Homes: filepath.Join(home, homesName), Tmp: k.tmp, BinDir: k.binDir,
		Netns: k.netns, NetnsEnter: filepath.Join(buildinfo.Prefix, "bin", "netns-enter"),
		Network:  networkFacts(o.hostNetwork),
		Launcher: self, Environ: os.Environ(), Shell: o.shell, Args: o.args,
		Config: in.directives, ConfigName: configName,
	}
	spec.Cgroup, spec.MemTotal = cgroup.ForSelf(uid), memTotal()
	if spec.Ceiling, err = loadCeiling(); err != nil {
		return nil, err
	}
	spec.CeilingName = ceilingPath()
	if o.mode == modeSeccompTable || o.mode == modeSeccompBPF {
		spec.Shell = true // the policy does not depend on the agent
	}
	l, err := sandbox.Build(osHost{}, spec)
	if err != nil {
		var ce *sandboxcfg.Error
		if errors.As(err, &ce) {
			return nil, &multicall.ExitError{Code: multicall.ExitUsage, Err: err}
		}
		return nil, err
	}
	return l, nil
}

// ceilingPath is the admin's ceiling on the sandboxes' budget.
func ceilingPath() string { return filepath.Join(buildinfo.Sysconfdir, "claude-sandbox", "limits") }

// loadCeiling reads the admin's ceiling, nil if there is none. Only root
// may own it: it bounds what every user asks for.
func loadCeiling() (sandboxcfg.Ceiling, error) {
	name := ceilingPath()
	b, err := sandboxcfg.Load(name, name, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return sandboxcfg.ParseCeiling(b, name)
}

// memTotal is the machine's memory in bytes from /proc/meminfo, 0 if it
// cannot be read.
func memTotal() uint64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(v)
			if len(f) != 2 || f[1] != "kB" {
				return 0
			}
			if n, err := strconv.ParseUint(f[0], 10, 64); err == nil {
				return n << 10
			}
		}
	}
	return 0
}
