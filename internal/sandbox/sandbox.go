// Package sandbox decides how the agent is started: the chain
// (systemd-run, netns-enter, bwrap), the bwrap plan built from the defaults
// and the user's ~/.claude-sandbox-init, the environment and the command.
//
// Build only looks at the host through a Host, so the whole decision is
// tested with a fake one; carrying it out is the claude applet's job.
package sandbox

import (
	"io/fs"
	"strconv"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
	"github.com/claude-sandbox/claude-sandbox/internal/cgroup"
	"github.com/claude-sandbox/claude-sandbox/internal/sandboxcfg"
	"github.com/claude-sandbox/claude-sandbox/internal/seccomp"
)

// The fds bwrap reads its options and its seccomp program from.
const (
	ArgsFD    = 3
	SeccompFD = 4
)

// Host is what Build may ask about the machine.
type Host interface {
	Stat(path string) (fs.FileInfo, error)
	Lstat(path string) (fs.FileInfo, error)
	Readlink(path string) (string, error)
	Glob(pattern string) ([]string, error)
	// ReadDir lists a directory, with each entry's type as the
	// directory itself tells it (no stat of each entry).
	ReadDir(path string) ([]fs.DirEntry, error)
	// ReadFile reads a regular file (git's index, .git files), not
	// following a symlink in its last component; one of more than max
	// bytes, as fstat tells on the opened file, is not read: the error is
	// a *TooLargeError.
	ReadFile(path string, max int64) ([]byte, error)
	// Reachable reports whether a unix stream socket accepts connections.
	Reachable(socket string) bool
}

// Spec is what the launcher knows before deciding.
type Spec struct {
	UID  int
	User string
	// Home is the real home directory; the sandbox home is bound there.
	Home string
	// Pwd is the physical working directory ("" if unknown).
	Pwd string
	// SandboxHome is the host directory bound at Home that every project
	// shares (`home shared`).
	SandboxHome string
	// Tmp is the directory CLAUDE_SBX_TMP names; "" makes /tmp a tmpfs
	// of the budget's size. Build binds at /tmp the project's own
	// directory below it (chooseTmp) and sets Tmp to that; tmpRoot keeps
	// the directory given.
	Tmp     string
	tmpRoot string
	// Cgroup is the cgroup v2 subtree delegated to the user
	// (cgroup.Find), where the sandbox runs when no user manager answers.
	Cgroup cgroup.Delegation
	// MemTotal is the machine's memory in bytes (0 if unknown): half of
	// it is the default memory limit in a delegated cgroup.
	MemTotal uint64
	// Homes holds a sandbox home per project, the shared login and the
	// common settings (home.go); "" shares SandboxHome in every project.
	Homes string
	// sharedHome is SandboxHome as given, once chooseHome has set
	// SandboxHome to the home of this start.
	sharedHome string
	// BinDir holds the agent binary `claude`.
	BinDir string
	// Netns is the network namespace to enter if it is active.
	Netns string
	// NetnsEnter is the path of the netns-enter helper.
	NetnsEnter string
	// Launcher is the launcher's own executable ("" if unknown): the
	// user runs it again at the next start.
	Launcher string
	// Network is what the launcher read of the namespaces (network.go).
	Network NetworkFacts
	// Environ is the launcher's environment.
	Environ []string
	// Shell runs a login shell instead of the agent.
	Shell bool
	// Args are the user's arguments for the agent or the shell.
	Args []string
	// Config is the parsed ~/.claude-sandbox-init; ConfigName names it in
	// messages.
	Config     []sandboxcfg.Directive
	ConfigName string
	// Ceiling is the admin's ceiling on the budget (nil if none), read
	// from the file CeilingName.
	Ceiling     sandboxcfg.Ceiling
	CeilingName string
}

// Launch is the decision: what to run, how.
type Launch struct {
	// SystemdRun and NetnsEnter are the prefixes of the chain, nil when
	// not used.
	SystemdRun []string
	// Cgroup is the cgroup the chain starts in when no user manager
	// answers and a cgroup is delegated to the user; nil otherwise.
	Cgroup     *cgroup.Plan
	NetnsEnter []string
	Plan       bwrap.Plan
	// Command runs inside the sandbox.
	Command []string
	// Env is the environment of the chain (and so of the command, with
	// the plan's setenv/unsetenv applied by bwrap).
	Env []string
	// Seccomp are the config's changes to the filter.
	Seccomp seccomp.Options
	// Notices are printed on stderr before starting.
	Notices []string
	// AgentGit is the host directory of the agent's own git repository
	// (git commit in the config), to be made before the start; "" if none.
	AgentGit string
	// Pushes are the git push lines that apply (with AgentGit), and
	// PushDir the host directory of their socket and staging repository.
	Pushes  []PushRule
	PushDir string
	// PushProject is the project whose remotes the pushes go to.
	PushProject string
	// PushWritable are the host directories every sandbox of the user
	// writes (WritableSources adds the binds).
	PushWritable []string
	// agentGitProject is the project whose .git it stands in for,
	// agentGitDir where it is bound (the project's .git, or a linked
	// worktree's git directory) and agentGitRef the branch it checks out
	// at its first start ("": the project's HEAD).
	agentGitProject, agentGitDir, agentGitRef string
	// GitScan is what the start found of the repositories the sandbox
	// can write, for the exit pass (nestedgit.go); nil if none was made.
	GitScan *GitScan
	// Notes explain decisions in the dry run.
	Notes []string
	// Skipped lists optional paths that do not exist here.
	Skipped []string
	// EnvRemoved and EnvSet describe the environment changes.
	EnvRemoved []string
	EnvSet     []string
	// SandboxHome is the sandbox home of this start; Homes is Spec.Homes
	// when it is a per-project home, else "".
	SandboxHome string
	Homes       string
	// Tmp is the project's directory below TmpRoot (CLAUDE_SBX_TMP)
	// bound at /tmp; both "" when /tmp is a tmpfs.
	Tmp, TmpRoot string
	// Writable are the host paths the sandbox can write besides the
	// plan's writable binds: the config's rw and dev binds whose condition
	// does not hold now (the agent may have written there before).
	Writable []string
	// budget is what the config's limit and budget lines ask for.
	budget budgetRequest
}

// InsideRuntimeDir is $XDG_RUNTIME_DIR inside the sandbox: an empty
// directory.
func InsideRuntimeDir(uid int) string { return "/run/user/" + strconv.Itoa(uid) }

// ConfigError is a problem with a line of the config file that only shows
// when the plan is built (a missing path, an invisible command).
type ConfigError = sandboxcfg.Error

// Build decides the launch. It runs these phases in order, each in the
// file named after it; each appends to the plan what it decides.
func Build(h Host, s Spec) (*Launch, error) {
	l := &Launch{}
	p := &l.Plan
	*p = Namespaces()
	p.SeccompFD = SeccompFD

	env := newEnv(s.Environ)

	// The chain: systemd-run and netns-enter (chain.go, network.go).
	net, err := l.chain(h, s, env)
	if err != nil {
		return nil, err
	}
	// System directories, read-only, the private /tmp and the agent
	// (mounts.go).
	agent, err := l.systemMounts(h, s)
	if err != nil {
		return nil, err
	}
	// The sandbox home, one per project unless `home shared`; kernel
	// file systems, scratch space, the home and the runtime directory
	// (home.go).
	if s, err = l.chooseHome(h, s); err != nil {
		return nil, err
	}
	s = l.chooseTmp(h, s)
	if err := l.homeAndScratch(h, s, net); err != nil {
		return nil, err
	}
	// The environment: scrub, then set ours; the chain's own (env.go).
	// The config's setenv and unsetenv change both.
	chain := l.environment(h, s, env, net.systemd)
	// The download caches every project shares with `cache shared`
	// (cache.go).
	if err := l.caches(h, s, env); err != nil {
		return nil, err
	}
	// The project of the working directory (project.go).
	proj, err := l.addProject(h, s)
	if err != nil {
		return nil, err
	}
	// The user's toolchains, read-only, and their settings without
	// credentials (toolchains.go).
	if err := l.toolchains(h, s, env, proj); err != nil {
		return nil, err
	}
	// The user's config, in order (directives.go).
	command, err := l.directives(h, s, env, chain, proj)
	if err != nil {
		return nil, err
	}
	// The budget: the scope's limits, the size of /tmp (budgets.go).
	if err := l.budgets(h, s, net.systemd, net.systemdVersion); err != nil {
		return nil, err
	}
	// The working directory and the git repositories the sandbox can
	// write, once every mount is known (projectgit.go).
	if err := l.finishProject(h, s, proj); err != nil {
		return nil, err
	}
	// The command (command.go).
	if err := l.command(h, s, env, chain, agent, command); err != nil {
		return nil, err
	}
	return l, nil
}

// Argv returns the command line of the whole chain; bwrap reads the plan's
// options from ArgsFD.
func (l *Launch) Argv(bwrapPath string) []string {
	var a []string
	a = append(a, l.SystemdRun...)
	a = append(a, l.NetnsEnter...)
	return append(a, bwrap.Argv(bwrapPath, ArgsFD, l.Command)...)
}
