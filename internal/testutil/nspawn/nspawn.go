// Package nspawn boots a throwaway systemd machine with systemd-nspawn for
// end-to-end tests that need a real systemd as PID 1 (units, networkd,
// logind, user managers), also on hosts whose own PID 1 is not systemd.
//
// The machine's root is an overlay of the host's / with a tmpfs upper layer,
// mounted in a private mount namespace of the nspawn process: nothing the
// machine writes reaches the host, and the mounts vanish with the process
// even when the test is killed. The machine has its own network namespace
// (--private-network), its own cgroup and a fresh /etc/machine-id. Boot
// starts the machine, waits until systemd reports "running" (or "degraded",
// with the failed units logged) and registers the teardown with t.Cleanup.
//
// Commands run in the machine through nsenter into all of PID 1's
// namespaces. Users must exist on the host before Boot: the machine sees
// the host's /etc/passwd as it was when the overlay was mounted.
package nspawn

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// BaseDir holds one directory per machine (lock file, seed tree, mount
// points). It is on disk so that a later run finds what a killed run left.
const BaseDir = "/var/tmp/claude-sbx-nspawn"

// NamePrefix starts every machine name (and the name of its cgroup).
const NamePrefix = "sbxe2e-"

// Target is the unit the machine boots into instead of the host's default
// target: basic.target plus D-Bus and logind, so that the host's enabled
// services (databases, gettys, timers) do not run in the machine.
const Target = "claude-sbx-e2e.target"

// DefaultMask are units masked on the kernel command line of the machine:
// they touch host hardware, wait for a network that never comes, or only
// slow the boot down.
var DefaultMask = []string{
	"getty.target",
	"console-getty.service",
	"systemd-networkd-wait-online.service",
	"systemd-timesyncd.service",
	"systemd-resolved.service",
	"systemd-pstore.service",
	"systemd-udevd.service",
	"systemd-udev-trigger.service",
	"systemd-hwdb-update.service",
	"systemd-random-seed.service",
	"systemd-firstboot.service",
	"systemd-binfmt.service",
	"e2scrub_reap.service",
	"apt-daily.timer",
	"apt-daily-upgrade.timer",
	"dpkg-db-backup.timer",
	"e2scrub_all.timer",
	"fstrim.timer",
	"man-db.timer",
	"logrotate.timer",
}

// Options configure Boot. The zero value boots a bare machine.
type Options struct {
	// BindRO and Bind are passed to systemd-nspawn as --bind-ro= and
	// --bind= ("HOST[:MACHINE[:OPTIONS]]"). nspawn mounts a fresh tmpfs
	// on the machine's /tmp, so bind what the test needs elsewhere.
	BindRO, Bind []string
	// Hide are absolute paths of the host that the machine does not see
	// (removed in its overlay, which leaves the host's as they are): the
	// state an earlier run or install left on the host, so that the
	// machine starts as a fresh system whatever ran on the host before.
	Hide []string
	// Files are written into the machine's root before it boots.
	Files []File
	// Mask adds units to DefaultMask; Wants adds units started at boot.
	Mask, Wants []string
	// Timeout bounds the boot (default 2 minutes).
	Timeout time.Duration
}

// File is a file placed in the machine before boot.
type File struct {
	Path string // absolute path in the machine
	Data string
	Mode uint32 // default 0644
}

// targetUnit is the unit file of Target; wants are extra units to start.
func targetUnit(wants []string) string {
	w := append([]string{"dbus.socket", "systemd-logind.service", "systemd-user-sessions.service"}, wants...)
	return "[Unit]\n" +
		"Description=claude-sandbox end-to-end test machine\n" +
		"Requires=basic.target\n" +
		"After=basic.target\n" +
		"Wants=" + strings.Join(w, " ") + "\n" +
		"AllowIsolate=yes\n"
}

// hideList is the file the wrapper reads the paths of Options.Hide from,
// one a line; a path must be absolute, clean, not / and without a newline.
func hideList(paths []string) (string, error) {
	var b strings.Builder
	for _, p := range paths {
		if !filepath.IsAbs(p) || filepath.Clean(p) != p || p == "/" || strings.ContainsAny(p, "\n\x00") {
			return "", fmt.Errorf("hide %q: not a clean absolute path below /", p)
		}
		b.WriteString(p + "\n")
	}
	return b.String(), nil
}

// nspawnArgs is the systemd-nspawn command line for machine name booting
// root. --register=no and --keep-unit are required without a host systemd
// (there is no machined and no unit to create); the cgroup is ours.
func nspawnArgs(name, root string, o Options) []string {
	args := []string{
		"systemd-nspawn",
		"--quiet",
		"--register=no",
		"--keep-unit",
		"--settings=no",
		"--link-journal=no",
		"--private-network",
		"--machine=" + name,
		"--directory=" + root,
		"--console=passive",
		"--boot",
	}
	for _, b := range o.BindRO {
		args = append(args, "--bind-ro="+b)
	}
	for _, b := range o.Bind {
		args = append(args, "--bind="+b)
	}
	args = append(args, "--", "systemd.unit="+Target)
	for _, u := range append(append([]string(nil), DefaultMask...), o.Mask...) {
		args = append(args, "systemd.mask="+u)
	}
	return args
}

// Output is what a command in the machine printed.
type Output struct {
	Stdout, Stderr string
}

// ExitError is returned by Run and RunAs when the command ran and failed.
type ExitError struct {
	Args []string
	Err  error
	Output
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("%s: %v: stdout %q stderr %q", strings.Join(e.Args, " "), e.Err, e.Stdout, e.Stderr)
}

func (e *ExitError) Unwrap() error { return e.Err }
