package bwrap

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MinVersion is the oldest bwrap with --disable-userns.
var MinVersion = [3]int{0, 8, 0}

// ParseVersion parses the output of `bwrap --version` ("bubblewrap 0.8.0").
func ParseVersion(out string) ([3]int, error) {
	var v [3]int
	f := strings.Fields(out)
	if len(f) != 2 || f[0] != "bubblewrap" {
		return v, fmt.Errorf("unexpected version output %q", strings.TrimSpace(out))
	}
	parts := strings.SplitN(f[1], ".", 3)
	for i, p := range parts {
		// Cut suffixes such as "0.11.0-rc1" or "0.9.0+git".
		if j := strings.IndexFunc(p, func(r rune) bool { return r < '0' || r > '9' }); j >= 0 {
			p = p[:j]
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return v, fmt.Errorf("unexpected version %q", f[1])
		}
		v[i] = n
	}
	return v, nil
}

// AtLeast reports whether v >= min.
func AtLeast(v, min [3]int) bool {
	for i := range v {
		if v[i] != min[i] {
			return v[i] > min[i]
		}
	}
	return true
}

// VersionString formats v as 1.2.3.
func VersionString(v [3]int) string { return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2]) }

// ErrUserns is wrapped by the errors of CheckUserns.
var ErrUserns = errors.New("user namespaces are not usable")

// Sysctl files that decide whether an unprivileged user may create user
// namespaces.
const (
	SysctlUsernsClone = "/proc/sys/kernel/unprivileged_userns_clone"
	SysctlAppArmor    = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"
	SysctlMaxUserns   = "/proc/sys/user/max_user_namespaces"
)

// CheckUserns decides from the sysctls (read reads one; a missing one
// returns an error and counts as the kernel's permissive default) whether
// unprivileged user namespaces are usable, and if not says which sysctl to
// set.
func CheckUserns(read func(path string) (string, error)) error {
	val := func(p string) (int, bool) {
		s, err := read(p)
		if err != nil {
			return 0, false
		}
		n, err := strconv.Atoi(strings.TrimSpace(s))
		return n, err == nil
	}
	const fix = " (make install ships 99-claude-code-sandbox.conf, which sets it at boot)"
	if n, ok := val(SysctlUsernsClone); ok && n == 0 {
		return fmt.Errorf("%w: kernel.unprivileged_userns_clone is 0: run sudo sysctl -w kernel.unprivileged_userns_clone=1%s", ErrUserns, fix)
	}
	// AppArmor's restriction (kernel.apparmor_restrict_unprivileged_userns)
	// is not refused here: a profile can exempt bwrap, and CheckAppArmor
	// tries it.
	if n, ok := val(SysctlMaxUserns); ok && n == 0 {
		return fmt.Errorf("%w: user.max_user_namespaces is 0: run sudo sysctl -w user.max_user_namespaces=16384 and set it in /etc/sysctl.d/", ErrUserns)
	}
	return nil
}
