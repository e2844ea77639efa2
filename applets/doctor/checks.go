package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/bindir"
	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
	"github.com/claude-sandbox/claude-sandbox/internal/cgroup"
	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/netpolicy"
	"github.com/claude-sandbox/claude-sandbox/internal/nft"
	"github.com/claude-sandbox/claude-sandbox/internal/quote"
	"github.com/claude-sandbox/claude-sandbox/internal/release"
	"github.com/claude-sandbox/claude-sandbox/internal/sandbox"
	"github.com/claude-sandbox/claude-sandbox/internal/seccomp"
	"github.com/claude-sandbox/claude-sandbox/internal/toolchain"
)

// Status is the verdict of one check.
type Status string

// Statuses. Skip means the check cannot be made by this user (root-only
// state seen by a user, or a user's state seen by root); its Fix says how
// to make it.
const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "FAIL"
	Skip Status = "skip"
)

// Result is one line of the report.
type Result struct {
	Check   string `json:"check"`
	Status  Status `json:"status"`
	Message string `json:"message"`
	// Fix is the command that turns the line ok, for every status but OK.
	Fix string `json:"fix,omitempty"`
}

// FileInfo is what the checks need of a file (stat, following symlinks).
type FileInfo struct {
	Mode fs.FileMode
	UID  uint32
}

// Output is how a command ended. Err is set when it could not be started.
type Output struct {
	Stdout, Stderr string
	Code           int
	Err            error
}

// Host is the machine as the checks see it. The real one is in
// host_linux.go; tests use a table of files and commands.
type Host interface {
	ReadFile(path string) ([]byte, error)
	// Stat follows symlinks.
	Stat(path string) (FileInfo, error)
	Readlink(path string) (string, error)
	// Run runs argv with the doctor's environment and no stdin.
	Run(ctx context.Context, argv ...string) Output
	// Reachable reports whether a unix socket accepts a connection.
	Reachable(socket string) bool
	Getenv(key string) string
	UID() int
	// User is the name of the user running the doctor.
	User() string
	// FindBwrap is bwrap.Find: the bwrap the launcher runs.
	FindBwrap() (string, error)
	// SHA256 returns the hex SHA-256 and the size of a regular file,
	// opened without following a symlink.
	SHA256(path string) (sum string, size int64, err error)
	// AgentState is bindir.ReadState: what claude-update recorded in the
	// bin directory; a missing file is an error that is fs.ErrNotExist.
	AgentState(binDir string) (*bindir.State, error)
	// TrustBinDir is bindir.CheckTrusted: nil if only root can change the
	// bin directory and the directories above it.
	TrustBinDir(binDir string) error
	// Tree is the file system as toolchain.Make asks about it, for the
	// toolchains check.
	Tree() toolchain.Host
	// DiskUsage is the space the files below dir take, symlinks not
	// followed, not crossing into other file systems.
	DiskUsage(dir string) (int64, error)
	// Cgroup is cgroup.ForSelf: the cgroup v2 subtree delegated to the
	// user, as the launcher finds it.
	Cgroup() cgroup.Delegation
}

// Config says what to check: the installed paths and the launcher's
// settings (the build's, as overridden by the launcher's environment).
type Config struct {
	Netns          string // the namespace the launcher enters
	NetnsDir       string // /run/netns
	ResolvConf     string // the namespace's resolv.conf
	NetnsEnter     string // $(PREFIX)/bin/netns-enter
	NetnsSetup     string // $(PREFIX)/bin/netns-setup
	Whitelist      string // $(SYSCONFDIR)/netns-enter
	FirewallConfig string // $(SYSCONFDIR)/netns-firewall.conf
	BinDir         string // the agent's bin directory
	HomeName       string // the shared sandbox home, in the user's home
	// Self is this program, run inside the namespace for the DNS check.
	Self string
	// DNSName is the name the DNS check resolves.
	DNSName string
}

// Sysctl and securityfs files the kernel checks read.
const (
	apparmorProfiles = "/sys/kernel/security/apparmor/profiles"
	seccompActions   = "/proc/sys/kernel/seccomp/actions_avail"
	procStatus       = "/proc/self/status"
)

// state carries what earlier checks found to later ones.
type state struct {
	ctx   context.Context
	h     Host
	c     Config
	root  bool
	bwrap string // the bwrap path, "" if none is usable
	// network is whether the network part is installed at all; without
	// it the launcher runs in the host's network and says so.
	network bool
	entered bool // netns-enter got into the namespace (non-root)
	up      bool // the namespace is up
}

// fixAsUser is the fix of a check that only the user who runs claude
// can make (root sees another user manager, PATH and home).
const fixAsUser = "claude-sandbox doctor (as the user who runs claude)"

// check is one check, in the order of the report.
type check func(s *state) Result

var checks = []check{
	checkUser,
	checkUsernsClone, checkMaxUserns, checkAppArmor,
	checkBwrap, checkProbe, checkSeccomp,
	checkUserManager, checkSlice, checkBudget, checkHomes,
	checkNetnsEnter, checkWhitelist, checkNamespace, checkFirewall, checkDNS, checkPolicy,
	checkBinDir, checkAgent, checkAgentHash,
	checkToolchains,
}

// Run makes every check, in order.
func Run(ctx context.Context, h Host, c Config) []Result {
	s := &state{ctx: ctx, h: h, c: c, root: h.UID() == 0}
	s.network = exists(h, c.NetnsEnter) || exists(h, c.NetnsSetup) || exists(h, path.Join(c.NetnsDir, c.Netns))
	out := make([]Result, 0, len(checks))
	for _, ch := range checks {
		r := ch(s)
		if r.Status == OK {
			r.Fix = ""
		}
		out = append(out, r)
	}
	return out
}

func (s *state) run(argv ...string) Output { return s.h.Run(s.ctx, argv...) }

// Where the commands the checks run are, as the launcher looks for
// systemd-run: fixed system paths, not $PATH.
var (
	systemdRun = sandbox.SystemdRunPaths()
	ipPaths    = []string{"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"}
)

// firstExisting returns the first of paths that exists, or "".
func (s *state) firstExisting(paths ...string) string {
	for _, p := range paths {
		if exists(s.h, p) {
			return p
		}
	}
	return ""
}

func exists(h Host, p string) bool {
	_, err := h.Stat(p)
	return err == nil
}

func readTrim(h Host, p string) (string, bool) {
	b, err := h.ReadFile(p)
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

// lastLine is the last non-empty line of s: bwrap, netns-enter and
// netns-setup put their error last, after whatever the program said before.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

func checkUser(s *state) Result {
	r := Result{Check: "user", Status: OK, Message: fmt.Sprintf("checking as %s (uid %d)", s.h.User(), s.h.UID())}
	if s.root {
		r.Status = Warn
		r.Message = "running as root: the sandbox probe, the user manager and the whitelist are skipped; AppArmor's loaded profiles, netns-setup status and the firewall need root"
		r.Fix = fixAsUser
	}
	return r
}

func checkUsernsClone(s *state) Result {
	r := Result{Check: "userns-clone"}
	v, ok := readTrim(s.h, bwrap.SysctlUsernsClone)
	switch {
	case !ok:
		r.Status, r.Message = OK, "kernel.unprivileged_userns_clone: not in this kernel (user namespaces are not switched off that way)"
	case v == "0":
		r.Status, r.Message = Fail, "kernel.unprivileged_userns_clone = 0: unprivileged users cannot create user namespaces"
		r.Fix = "sudo sysctl -w kernel.unprivileged_userns_clone=1"
	default:
		r.Status, r.Message = OK, "kernel.unprivileged_userns_clone = "+v
	}
	return r
}

func checkMaxUserns(s *state) Result {
	r := Result{Check: "max-userns"}
	v, ok := readTrim(s.h, bwrap.SysctlMaxUserns)
	n, err := strconv.Atoi(v)
	switch {
	case !ok:
		r.Status, r.Message = OK, "user.max_user_namespaces: not in this kernel"
	case err != nil:
		r.Status, r.Message = Warn, fmt.Sprintf("user.max_user_namespaces = %q: not a number", v)
		r.Fix = "sudo sysctl -w user.max_user_namespaces=16384"
	case n == 0:
		r.Status, r.Message = Fail, "user.max_user_namespaces = 0: no user namespaces can be created"
		r.Fix = "sudo sysctl -w user.max_user_namespaces=16384"
	default:
		r.Status, r.Message = OK, "user.max_user_namespaces = "+v
	}
	return r
}

// checkAppArmor checks AppArmor's user namespace restriction and, where it
// is on, the profile `make install` installs for bwrap.
func checkAppArmor(s *state) Result {
	r := Result{Check: "apparmor"}
	v, ok := readTrim(s.h, bwrap.SysctlAppArmor)
	if !ok {
		r.Status, r.Message = OK, "no AppArmor user namespace restriction in this kernel"
		return r
	}
	if v == "0" {
		r.Status, r.Message = OK, "kernel.apparmor_restrict_unprivileged_userns = 0: the restriction is off for every program (the global opt-in, which the bwrap profile makes unnecessary)"
		return r
	}
	bw := s.bwrapPath()
	prof, err := s.h.ReadFile(bwrap.AppArmorProfilePath)
	if err != nil {
		r.Status, r.Message = Fail, fmt.Sprintf("AppArmor restricts user namespaces (kernel.apparmor_restrict_unprivileged_userns = %s) and %s is not installed", v, bwrap.AppArmorProfilePath)
		r.Fix = bwrap.AppArmorFix(bw, "")
		return r
	}
	if !strings.Contains(string(prof), " "+bw+" ") {
		r.Status, r.Message = Fail, fmt.Sprintf("%s is for another bwrap than %s, the one the launcher runs", bwrap.AppArmorProfilePath, bw)
		r.Fix = bwrap.AppArmorFix(bw, string(prof))
		return r
	}
	loaded, err := s.h.ReadFile(apparmorProfiles)
	if err != nil {
		// Only root may list the loaded profiles; the probe shows
		// whether this one works.
		r.Status, r.Message = OK, fmt.Sprintf("restricted; %s is installed for %s (that it is loaded shows in the probe; root sees the list)", bwrap.AppArmorProfilePath, bw)
		return r
	}
	names := map[string]bool{}
	for _, l := range strings.Split(string(loaded), "\n") {
		if name, _, ok := strings.Cut(l, " ("); ok {
			names[name] = true
		}
	}
	switch {
	case !names[bwrap.AppArmorProfileName]:
		r.Status, r.Message = Fail, fmt.Sprintf("restricted, and profile %s is installed but not loaded", bwrap.AppArmorProfileName)
		r.Fix = bwrap.AppArmorFix(bw, string(prof))
	case names["bwrap"]:
		// The apparmor package's bwrap-userns-restrict attaches to
		// the same binary: two profiles for one path conflict.
		r.Status, r.Message = Warn, fmt.Sprintf("profile %s is loaded, and so is the apparmor package's bwrap (bwrap-userns-restrict), for the same binary", bwrap.AppArmorProfileName)
		r.Fix = "sudo aa-disable /etc/apparmor.d/bwrap-userns-restrict"
	default:
		r.Status, r.Message = OK, fmt.Sprintf("restricted; profile %s is loaded for %s", bwrap.AppArmorProfileName, bw)
	}
	return r
}

// bwrapPath is the bwrap the launcher runs, or DefaultPath for messages
// when there is none.
func (s *state) bwrapPath() string {
	if p, err := s.h.FindBwrap(); err == nil {
		return p
	}
	return "/usr/bin/bwrap" // bwrap.DefaultPath, which is Linux-only
}

func checkBwrap(s *state) Result {
	r := Result{Check: "bwrap", Status: Fail}
	p, err := s.h.FindBwrap()
	if err != nil {
		r.Message = "bwrap not found in /usr/bin or a root-owned directory of PATH"
		r.Fix = "sudo apt-get install bubblewrap (Fedora: dnf install bubblewrap; Arch: pacman -S bubblewrap)"
		return r
	}
	fi, err := s.h.Stat(p)
	if err != nil {
		r.Message = fmt.Sprintf("%s: %v", p, err)
		r.Fix = "sudo apt-get install --reinstall bubblewrap"
		return r
	}
	if fi.Mode&fs.ModeSetuid != 0 {
		r.Message = p + " is setuid root: the sandbox needs bwrap to run unprivileged in a user namespace"
		r.Fix = "sudo chmod u-s " + p
		return r
	}
	out := s.run(p, "--version")
	if out.Err != nil || out.Code != 0 {
		r.Message = fmt.Sprintf("%s --version failed: %s", p, errText(out))
		r.Fix = "sudo apt-get install --reinstall bubblewrap"
		return r
	}
	v, err := bwrap.ParseVersion(out.Stdout)
	if err != nil {
		r.Message = fmt.Sprintf("%s: %v", p, err)
		r.Fix = "sudo apt-get install --reinstall bubblewrap"
		return r
	}
	if !bwrap.AtLeast(v, bwrap.MinVersion) {
		r.Message = fmt.Sprintf("%s is bubblewrap %s: %s or newer is needed (for --disable-userns)", p, bwrap.VersionString(v), bwrap.VersionString(bwrap.MinVersion))
		r.Fix = "sudo apt-get install --only-upgrade bubblewrap"
		return r
	}
	s.bwrap = p
	r.Status, r.Message = OK, fmt.Sprintf("%s: bubblewrap %s, not setuid", p, bwrap.VersionString(v))
	return r
}

func errText(o Output) string {
	if o.Err != nil {
		return o.Err.Error()
	}
	if t := lastLine(o.Stderr); t != "" {
		return t
	}
	return "exit status " + strconv.Itoa(o.Code)
}

// checkProbe runs `true` in bwrap with the launcher's namespace options:
// what the kernel, AppArmor and bwrap allow, for real.
func checkProbe(s *state) Result {
	r := Result{Check: "sandbox-probe"}
	if s.bwrap == "" {
		r.Status, r.Message, r.Fix = Skip, "no usable bwrap", "see the bwrap line"
		return r
	}
	if s.root {
		r.Status, r.Message = Skip, "root may create namespaces the user may not"
		r.Fix = fixAsUser
		return r
	}
	args := bwrap.ProbeArgs(sandbox.Namespaces())
	out := s.run(append([]string{s.bwrap}, args...)...)
	if out.Err == nil && out.Code == 0 {
		r.Status, r.Message = OK, "bwrap runs true in new user, pid, ipc, uts and cgroup namespaces with user namespaces disabled inside"
		return r
	}
	r.Status = Fail
	msg := errText(out)
	restricted := bwrap.AppArmorRestricted(func(p string) (string, error) {
		b, err := s.h.ReadFile(p)
		return string(b), err
	})
	switch {
	case restricted && bwrap.IsAppArmorFailure(out.Stderr):
		prof, _ := s.h.ReadFile(bwrap.AppArmorProfilePath)
		r.Message = "AppArmor keeps bwrap from setting up its user namespace: " + msg
		r.Fix = bwrap.AppArmorFix(s.bwrap, string(prof))
	default:
		r.Message = msg
		r.Fix = "run it to see: " + s.bwrap + " " + strings.Join(args, " ")
	}
	return r
}

// checkSeccomp checks that the kernel has seccomp filters with the actions
// the filter uses, and that the filter builds for this architecture.
func checkSeccomp(s *state) Result {
	r := Result{Check: "seccomp", Status: Fail}
	st, _ := s.h.ReadFile(procStatus)
	if !strings.Contains(string(st), "\nSeccomp:") {
		r.Message = "this kernel has no seccomp (no Seccomp: line in /proc/self/status)"
		r.Fix = "boot a kernel built with CONFIG_SECCOMP_FILTER=y (every distribution kernel is)"
		return r
	}
	acts, ok := readTrim(s.h, seccompActions)
	if ok {
		have := map[string]bool{}
		for _, a := range strings.Fields(acts) {
			have[a] = true
		}
		for _, a := range []string{"kill_process", "errno", "allow"} {
			if !have[a] {
				r.Message = fmt.Sprintf("the kernel's seccomp lacks the %s action (%s: %s)", a, seccompActions, acts)
				r.Fix = "boot Linux 4.14 or newer"
				return r
			}
		}
	}
	f, err := buildFilter()
	if err != nil {
		r.Message = "the seccomp filter does not build here: " + err.Error()
		r.Fix = "none: the sandbox supports amd64 and arm64"
		return r
	}
	r.Status, r.Message = OK, fmt.Sprintf("seccomp filters available; the filter builds for %s (%d instructions)", f.arch, f.n)
	return r
}

// checkUserManager checks for the systemd user manager the launcher puts
// the sandbox's scope under. Without one the launcher runs without it.
func checkUserManager(s *state) Result {
	r := Result{Check: "systemd-user", Status: Warn}
	if s.root {
		r.Status, r.Message = Skip, "the user manager is the user's"
		r.Fix = fixAsUser
		return r
	}
	dir := s.h.Getenv("XDG_RUNTIME_DIR")
	user := s.h.User()
	switch {
	case s.firstExisting(systemdRun...) == "":
		r.Message = "systemd-run is not installed: the sandbox runs without a scope in agent.slice, so without a budget"
		r.Fix = "sudo apt-get install systemd"
	case !path.IsAbs(dir):
		r.Message = "XDG_RUNTIME_DIR is not set: no systemd user manager, so the sandbox runs without a scope in agent.slice, so without a budget"
		r.Fix = "log in through a PAM session (sudo apt-get install libpam-systemd), or: sudo loginctl enable-linger " + user
	case !s.h.Reachable(sandbox.UserManagerSocket(dir)):
		r.Message = "no systemd user manager answers at " + sandbox.UserManagerSocket(dir) + ": the sandbox runs without a scope in agent.slice, so without a budget"
		r.Fix = "sudo loginctl enable-linger " + user
	default:
		r.Status, r.Message = OK, "systemd user manager at "+sandbox.UserManagerSocket(dir)
	}
	return r
}

// checkSlice starts a scope in agent.slice, as the launcher does.
func checkSlice(s *state) Result {
	r := Result{Check: "agent-slice"}
	if s.root {
		r.Status, r.Message = Skip, "the agent slice is the user's"
		r.Fix = fixAsUser
		return r
	}
	dir := s.h.Getenv("XDG_RUNTIME_DIR")
	if !path.IsAbs(dir) || !s.h.Reachable(sandbox.UserManagerSocket(dir)) {
		r.Status, r.Message, r.Fix = Skip, "no user manager", "see the systemd-user line"
		return r
	}
	sr := s.firstExisting(systemdRun...)
	if sr == "" {
		r.Status, r.Message, r.Fix = Skip, "no systemd-run", "see the systemd-user line"
		return r
	}
	argv := append(sandbox.ScopeCommand(sr), "true")
	out := s.run(argv...)
	if out.Err == nil && out.Code == 0 {
		r.Status, r.Message = OK, "systemd-run --user --scope --slice=agent runs true"
		return r
	}
	r.Status, r.Message = Fail, "a scope in agent.slice cannot be started: "+errText(out)
	r.Fix = "run it to see: " + strings.Join(argv, " ") + "; then: systemctl --user status agent.slice"
	return r
}

const installNetwork = "sudo make install-network && sudo systemctl enable --now systemd-networkd netns@%s.service"

// notInstalled is the line of a network check when the network part is
// not installed at all: the launcher then runs in the host's network. The
// first network line (netns-enter) warns; the others are skipped.
func (s *state) notInstalled(name string) Result {
	if name != "netns-enter" {
		return Result{Check: name, Status: Skip, Message: "the network part is not installed", Fix: "see the netns-enter line"}
	}
	return Result{Check: name, Status: Warn,
		Message: "the network part is not installed: the sandbox shares the host's network (LAN, 127.0.0.1 services)",
		Fix:     fmt.Sprintf(installNetwork, s.c.Netns)}
}

func checkNetnsEnter(s *state) Result {
	r := Result{Check: "netns-enter", Status: Fail}
	if !s.network {
		return s.notInstalled(r.Check)
	}
	p := s.c.NetnsEnter
	fi, err := s.h.Stat(p)
	switch {
	case err != nil:
		r.Message = p + " is not installed"
		r.Fix = "sudo make install-network"
	case fi.UID != 0:
		r.Message = fmt.Sprintf("%s is owned by uid %d, not root", p, fi.UID)
		r.Fix = "sudo chown root:root " + p + " && sudo chmod 4755 " + p
	case fi.Mode.Perm()&0o022 != 0:
		r.Message = fmt.Sprintf("%s is writable by others (mode %04o)", p, fi.Mode.Perm())
		r.Fix = "sudo chmod 4755 " + p
	case fi.Mode&fs.ModeSetuid == 0:
		r.Message = p + " is not setuid"
		r.Fix = "sudo chmod 4755 " + p
	default:
		r.Status, r.Message = OK, p+": root-owned, setuid"
	}
	return r
}

// checkWhitelist asks netns-enter itself whether the caller may enter the
// namespace: its own parser and rules, not a copy of them.
func checkWhitelist(s *state) Result {
	r := Result{Check: "whitelist", Status: Fail}
	if !s.network {
		return s.notInstalled(r.Check)
	}
	w, ns, user := s.c.Whitelist, s.c.Netns, s.h.User()
	addLine := fmt.Sprintf("echo %s | sudo tee -a %s", ns, w)
	if s.root {
		b, err := s.h.ReadFile(w)
		if err != nil {
			r.Message = w + " does not exist"
			r.Fix = "sudo make install-network"
			return r
		}
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == ns {
				r.Status, r.Message = Skip, fmt.Sprintf("%s names %s; whether a user may enter shows when that user runs the doctor", w, ns)
				r.Fix = fixAsUser
				return r
			}
		}
		r.Message = fmt.Sprintf("%s does not name %s", w, ns)
		r.Fix = addLine
		return r
	}
	// netns-enter's exit status says why it refused (multicall's
	// contract); its message is shown, never parsed. `true` exits 0.
	out := s.run(s.c.NetnsEnter, ns, "--", "true")
	msg := errText(out)
	code := out.Code
	if out.Err != nil {
		code = -1
	}
	switch code {
	case multicall.ExitOK:
		s.entered = true
		r.Status, r.Message = OK, fmt.Sprintf("%s admits %s to %s (netns-enter %s -- true ran)", w, user, ns, ns)
	case multicall.ExitNotActive:
		// netns-enter checks the whitelist before the namespace.
		r.Status, r.Message = OK, fmt.Sprintf("%s admits %s to %s", w, user, ns)
	case multicall.ExitNotListed:
		r.Message = msg
		r.Fix = addLine
	case multicall.ExitNotMember:
		r.Message = msg
		r.Fix = fmt.Sprintf("sudo usermod -aG %s %s (then log in again)", whitelistGroup(s.h, w, ns), user)
	case multicall.ExitNoWhitelist:
		r.Message = msg
		r.Fix = "sudo make install-network"
	case multicall.ExitNotSetuid:
		r.Message = msg
		r.Fix = "sudo chmod 4755 " + s.c.NetnsEnter
	case multicall.ExitNoNewPrivs:
		r.Message = msg
		r.Fix = "run claude-sandbox doctor outside the sandbox"
	default:
		r.Message = "netns-enter: " + msg
		r.Fix = "see DIAGNOSTICS in netns-enter(8)"
	}
	return r
}

// whitelistGroup is the GROUP of the whitelist's "NS @GROUP" line, for the
// fix of a caller who is not a member; "GROUP" if the file does not say.
// The verdict is netns-enter's; this only names the group in the advice.
func whitelistGroup(h Host, whitelist, ns string) string {
	b, _ := h.ReadFile(whitelist)
	for _, l := range strings.Split(string(b), "\n") {
		l, _, _ = strings.Cut(l, "#")
		if f := strings.Fields(l); len(f) == 2 && f[0] == ns && strings.HasPrefix(f[1], "@") && len(f[1]) > 1 {
			return quote.String(f[1][1:])
		}
	}
	return "GROUP"
}

// checkNamespace: netns-setup status as root; the namespace's file (and
// netns-enter's entry above) otherwise.
func checkNamespace(s *state) Result {
	r := Result{Check: "namespace", Status: Fail}
	if !s.network {
		return s.notInstalled(r.Check)
	}
	ns := s.c.Netns
	restart := fmt.Sprintf("sudo systemctl restart netns@%s.service (without systemd: sudo netns-setup up %s)", ns, ns)
	if s.root {
		out := s.run(s.c.NetnsSetup, "status", ns)
		switch {
		case out.Err != nil:
			r.Message = fmt.Sprintf("%s: %v", s.c.NetnsSetup, out.Err)
			r.Fix = "sudo make install-network"
		case out.Code != 0:
			r.Message = "netns-setup status: " + errText(out)
			r.Fix = restart
		default:
			s.up = true
			r.Status, r.Message = OK, fmt.Sprintf("namespace %s is up (netns-setup status)", ns)
		}
		return r
	}
	p := path.Join(s.c.NetnsDir, ns)
	if !exists(s.h, p) {
		r.Message = fmt.Sprintf("namespace %s is not active (%s missing)", ns, p)
		r.Fix = fmt.Sprintf("sudo systemctl enable --now netns@%s.service", ns)
		return r
	}
	if !s.entered {
		// netns-enter refused before it reached the namespace: the
		// whitelist line says why.
		r.Status, r.Message, r.Fix = Skip, fmt.Sprintf("%s exists; netns-enter did not get in", p), "see the whitelist line"
		return r
	}
	s.up = true
	r.Status, r.Message = OK, fmt.Sprintf("namespace %s is active and enterable (sudo claude-sandbox doctor runs netns-setup status)", ns)
	return r
}

// checkFirewall reads the firewall line of netns-setup status: nftables
// needs root.
func checkFirewall(s *state) Result {
	r := Result{Check: "firewall", Status: Fail}
	if !s.network {
		return s.notInstalled(r.Check)
	}
	table := "table inet " + nft.TableName
	if !s.root {
		r.Status, r.Message = Skip, "the nftables ruleset is visible to root only"
		r.Fix = "sudo claude-sandbox doctor"
		return r
	}
	out := s.run(s.c.NetnsSetup, "status", s.c.Netns)
	switch {
	case strings.Contains(out.Stdout, table+": present"):
		r.Status, r.Message = OK, table+" is present"
	case strings.Contains(out.Stdout, table+": missing"):
		r.Message = table + " is missing: the sandboxes' traffic is not filtered"
		r.Fix = fmt.Sprintf("sudo systemctl restart netns@%s.service", s.c.Netns)
	default:
		r.Message = "netns-setup status did not say: " + errText(out)
		r.Fix = fmt.Sprintf("sudo netns-setup status %s", s.c.Netns)
	}
	return r
}

// checkDNS resolves a name from inside the namespace, with the
// namespace's resolv.conf: this program, run through netns-enter (or, for
// root, ip netns exec) with its hidden --resolve-with mode.
func checkDNS(s *state) Result {
	r := Result{Check: "dns", Status: Fail}
	if !s.network {
		return s.notInstalled(r.Check)
	}
	if !s.up {
		r.Status, r.Message, r.Fix = Skip, "the namespace is not up", "see the namespace line"
		return r
	}
	ns := s.c.Netns
	probe := []string{s.c.Self, "doctor", "--resolve-with", s.c.ResolvConf, "--dns-name", s.c.DNSName}
	var argv []string
	if s.root {
		ip := s.firstExisting(ipPaths...)
		if ip == "" {
			r.Status, r.Message, r.Fix = Skip, "ip(8) is not installed", "sudo apt-get install iproute2"
			return r
		}
		argv = append([]string{ip, "netns", "exec", ns}, probe...)
	} else {
		argv = append([]string{s.c.NetnsEnter, ns, "--"}, probe...)
	}
	out := s.run(argv...)
	if out.Err == nil && out.Code == 0 {
		r.Status, r.Message = OK, fmt.Sprintf("%s resolves inside %s: %s", s.c.DNSName, ns, strings.TrimSpace(out.Stdout))
		return r
	}
	r.Message = fmt.Sprintf("%s does not resolve inside %s: %s", s.c.DNSName, ns, errText(out))
	r.Fix = fmt.Sprintf("check the nameserver in %s (sudo systemctl restart netns@%s.service rewrites it; netns-dns answers there: systemctl status netns-dns; refused names: sudo netns-setup denials %s)", s.c.ResolvConf, ns, ns)
	return r
}

// checkPolicy checks the policy the firewall is built from.
//
// That is netns-firewall.conf: its policy, domain, preset, allow and
// resolver lines, which netns-setup up turns into the tables above (a
// namespace's own netns-firewall.d/NAME.conf adds to it; netns-setup
// status NAME shows the result for one namespace).
func checkPolicy(s *state) Result {
	r := Result{Check: "policy", Status: Fail}
	if !s.network {
		return s.notInstalled(r.Check)
	}
	f := s.c.FirewallConfig
	b, err := s.h.ReadFile(f)
	if err != nil {
		// netns-setup builds the default firewall without the file.
		r.Status, r.Message = Warn, f+" is missing: the firewall blocks the LAN and host ranges and allows the rest"
		r.Fix = "sudo make install-network (installs the default: policy allowlist, presets claude-code and dev)"
		return r
	}
	c, err := netpolicy.ParseConfig(f, b)
	if err != nil {
		r.Message = err.Error()
		r.Fix = "fix that line, then: sudo systemctl restart netns@" + s.c.Netns + ".service"
		return r
	}
	policy := c.Policy
	if policy == "" {
		policy = "none (open, the host's resolver)"
	}
	r.Status, r.Message = OK, fmt.Sprintf("%s: LAN and host ranges blocked, policy %s, %d domain line(s), %d preset(s), %d allow line(s), %d resolver line(s)",
		f, policy, len(c.Domains), len(c.Presets), len(c.Allow), len(c.Resolvers))
	return r
}

// checkAgent checks the installed agent: the symlink claude-update
// switches, and the binary's owner and mode (what a user could rewrite
// would run in every sandbox).
func checkAgent(s *state) Result {
	r := Result{Check: "agent", Status: Fail}
	link := path.Join(s.c.BinDir, bindir.Link)
	target, err := s.h.Readlink(link)
	if err != nil {
		r.Message = link + " is not installed"
		r.Fix = "sudo claude-update"
		return r
	}
	bin := target
	if !path.IsAbs(bin) {
		bin = path.Join(s.c.BinDir, bin)
	}
	fi, err := s.h.Stat(bin)
	switch {
	case err != nil:
		r.Message = fmt.Sprintf("%s points to %s, which is missing", link, target)
		r.Fix = "sudo claude-update --force"
		return r
	case fi.UID != 0 || fi.Mode.Perm()&0o022 != 0:
		r.Message = fmt.Sprintf("%s is owned by uid %d with mode %04o: anyone who can write it controls every sandbox", bin, fi.UID, fi.Mode.Perm())
		r.Fix = "sudo chown root:root " + bin + " && sudo chmod 0755 " + bin
		return r
	case fi.Mode.Perm()&0o111 == 0:
		r.Message = bin + " is not executable"
		r.Fix = "sudo claude-update --force"
		return r
	}
	r.Status, r.Message = OK, fmt.Sprintf("%s -> %s (version %s)", link, target, agentVersion(target))
	return r
}

// agentVersion is the version in a binary's name, claude.VERSION.
func agentVersion(target string) string {
	v, ok := strings.CutPrefix(path.Base(target), "claude.")
	if !ok {
		return "unknown"
	}
	return v
}

// checkBinDir checks the bin directory as a root claude-update does
// before it installs there: whoever else can change it, or a directory
// above it, chooses what every sandbox runs.
func checkBinDir(s *state) Result {
	r := Result{Check: "bin-dir", Status: Fail}
	dir := s.c.BinDir
	if _, err := s.h.Stat(dir); err != nil {
		r.Status, r.Message, r.Fix = Skip, dir+" does not exist", "see the agent line"
		return r
	}
	err := s.h.TrustBinDir(dir)
	var ue *bindir.UntrustedError
	switch {
	case errors.As(err, &ue):
		r.Message = fmt.Sprintf("%s %s: whoever can change it chooses what every sandbox runs, and claude-update refuses it", ue.Path, ue.Problem)
		r.Fix = ue.Advice
	case err != nil:
		r.Message = err.Error()
		r.Fix = "set CLAUDE_SBX_BINDIR to a directory that root owns and only root can write (such as /opt/claude/bin)"
	default:
		r.Status, r.Message = OK, dir+" and the directories above it are root's and writable by no one else"
	}
	return r
}

// checkAgentHash re-hashes the current binary and compares it with what
// claude-update recorded when it verified it (bindir's state file), and
// shows the hold. A binary without a record (installed by hand or by an
// older claude-update) is a warning: claude-update VERSION verifies it
// against the signed manifest, or downloads it again, and records it.
func checkAgentHash(s *state) Result {
	r := Result{Check: "agent-hash", Status: Fail}
	link := path.Join(s.c.BinDir, bindir.Link)
	target, err := s.h.Readlink(link)
	if err != nil {
		r.Status, r.Message, r.Fix = Skip, "no agent installed", "see the agent line"
		return r
	}
	bin := target
	if !path.IsAbs(bin) {
		bin = path.Join(s.c.BinDir, bin)
	}
	v, err := release.ParseVersion(agentVersion(target))
	if err != nil || path.Dir(bin) != path.Clean(s.c.BinDir) {
		r.Status = Warn
		r.Message = fmt.Sprintf("%s points to %s, not to a claude.VERSION that claude-update installed: nothing records its hash", quote.String(link), quote.String(target))
		r.Fix = "sudo claude-update"
		return r
	}
	reinstall := "sudo claude-update " + v.String()
	stateFile := path.Join(s.c.BinDir, bindir.StateName)
	st, err := s.h.AgentState(s.c.BinDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		r.Status = Warn
		r.Message = fmt.Sprintf("no %s: nothing records that claude-update verified %s (installed by hand or by an older claude-update)", stateFile, path.Base(bin))
		r.Fix = reinstall + " (verifies it again and records it)"
		return r
	case err != nil:
		r.Message = err.Error()
		r.Fix = fmt.Sprintf("sudo mv %s %s.damaged && %s", stateFile, stateFile, reinstall)
		return r
	}
	rec, ok := st.Record(v)
	if !ok {
		r.Status = Warn
		r.Message = fmt.Sprintf("%s has no record of %s: nothing says claude-update verified %s", stateFile, v, path.Base(bin))
		r.Fix = reinstall + " (verifies it again and records it)"
		return r
	}
	sum, size, err := s.h.SHA256(bin)
	if err != nil {
		r.Message = fmt.Sprintf("hash %s: %v", bin, err)
		r.Fix = "sudo claude-update --force " + v.String()
		return r
	}
	if sum != rec.SHA256 || size != rec.Size {
		r.Message = fmt.Sprintf("%s has SHA-256 %s (%d bytes), but %s records %s (%d bytes): the binary changed after claude-update verified it", bin, sum, size, stateFile, quote.String(rec.SHA256), rec.Size)
		r.Fix = "sudo claude-update --force " + v.String()
		return r
	}
	r.Status, r.Message = OK, fmt.Sprintf("%s matches the SHA-256 claude-update verified (from %s)", path.Base(bin), quote.String(rec.Source))
	if h, ok := st.HoldVersion(); ok {
		r.Message += fmt.Sprintf("; held at %s (sudo claude-update --unhold follows the channel again)", h)
	}
	return r
}

// filterInfo is what the seccomp line says of the filter.
type filterInfo struct {
	arch string
	n    int
}

// buildFilter builds the default filter for this architecture, as the
// launcher does.
func buildFilter() (filterInfo, error) {
	f, err := seccomp.Build(seccomp.Options{})
	if err != nil {
		return filterInfo{}, err
	}
	return filterInfo{f.Arch(), f.Len()}, nil
}
