package bwrap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// The AppArmor profile `make install` installs for bwrap where AppArmor
// restricts user namespaces (install/apparmor/claude-sandbox-bwrap).
const (
	AppArmorProfileName = "claude-sandbox-bwrap"
	AppArmorProfilePath = "/etc/apparmor.d/" + AppArmorProfileName
)

// ErrAppArmor is wrapped by the error of CheckAppArmor when AppArmor keeps
// bwrap from setting up its user namespace.
var ErrAppArmor = errors.New("AppArmor blocks bwrap's user namespace")

// AppArmorRestricted reports whether the kernel's AppArmor restricts
// unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns
// is 1; a missing file is a kernel without the restriction).
func AppArmorRestricted(read func(path string) (string, error)) bool {
	s, err := read(SysctlAppArmor)
	if err != nil {
		return false
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	return err == nil && n != 0
}

// appArmorSignatures are how bwrap fails when AppArmor moves it into the
// unprivileged_userns profile on creating a user namespace: that profile
// denies the capabilities (and the proc file writes) bwrap needs inside.
// The first is the usual one; the second appears with --unshare-net (where
// the uid map happens to be written before the loopback is set up); the
// last two are bwrap's words when the namespace itself is refused
// (kernel.apparmor_restrict_unprivileged_unconfined).
var appArmorSignatures = []string{
	"bwrap: setting up uid map: Permission denied",
	"bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted",
	"bwrap: Creating new namespace failed: Permission denied",
	"bwrap: No permissions to create new namespace",
}

// IsAppArmorFailure reports whether bwrap's stderr is one of the ways it
// fails under AppArmor's user namespace restriction.
func IsAppArmorFailure(stderr string) bool {
	for _, s := range appArmorSignatures {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// AppArmorFix is the command that lets bwrap at path use user namespaces:
// load the profile if it is installed for that path, else install it.
// profile is the installed profile's text ("" if there is none).
func AppArmorFix(path, profile string) string {
	switch {
	case profile == "":
		return "sudo make install (in the claude-sandbox source tree: it installs and loads " + AppArmorProfilePath + ")"
	case !strings.Contains(profile, " "+path+" "):
		return "sudo make install BWRAP=" + path + " (" + AppArmorProfilePath + " is for another bwrap)"
	default:
		return "sudo apparmor_parser -r " + AppArmorProfilePath
	}
}

// ProbeArgs are the arguments (after the bwrap binary) that run `true` in
// a sandbox with plan's namespace options and nothing else of it.
func ProbeArgs(plan Plan) []string {
	p := Plan{Unshare: plan.Unshare, DisableUserns: plan.DisableUserns, DieWithParent: plan.DieWithParent, SeccompFD: -1}
	return append(p.Args(), "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true")
}

// Probe runs bwrap at path with ProbeArgs(plan) and returns its stderr and
// how it ended.
func Probe(ctx context.Context, path string, plan Plan) (stderr string, err error) {
	cmd := exec.CommandContext(ctx, path, ProbeArgs(plan)...)
	cmd.Dir, cmd.Env = "/", []string{"PATH=/usr/bin:/bin"}
	var buf bytes.Buffer
	cmd.Stderr = &buf
	err = cmd.Run()
	return strings.TrimSpace(buf.String()), err
}

// CheckAppArmor runs the probe where AppArmor restricts user namespaces,
// and turns bwrap's raw AppArmor failure into one line with the fix. A
// probe that fails otherwise is left to the launch itself, whose bwrap
// then says why on the terminal. read reads a file (the sysctl, the
// installed profile).
func CheckAppArmor(ctx context.Context, path string, plan Plan, read func(path string) (string, error)) error {
	if !AppArmorRestricted(read) {
		return nil
	}
	stderr, err := Probe(ctx, path, plan)
	if err == nil || !IsAppArmorFailure(stderr) {
		return nil
	}
	profile, _ := read(AppArmorProfilePath)
	return fmt.Errorf("%w (kernel.apparmor_restrict_unprivileged_userns=1; bwrap said %q): run %s; claude-sandbox doctor checks the rest", ErrAppArmor, stderr, AppArmorFix(path, profile))
}
