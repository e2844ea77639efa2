// Package netnsenter is the netns-enter applet: a setuid-root helper that
// lets an unprivileged user run a command inside a whitelisted, persistent
// network namespace (/run/netns/NAME), with the caller's own credentials,
// groups, file descriptors and environment.
//
//	netns-enter [--netns=]NAME -- CMD [ARGS...]
//
// It only calls setns(2) for the network namespace: it does not touch the
// mount namespace, so /etc/netns/NAME/resolv.conf is not bound over
// /etc/resolv.conf (as "ip netns exec" would do). The launcher binds that
// file inside its sandbox instead.
//
// Everything it does with privilege is in enter_linux.go, in order, after
// the entry point of entry_linux.go (recording the caller's signals before
// Go's runtime starts, and starting it as the caller); the parsers of
// untrusted input (arguments, whitelist and its ACLs, /etc/group) are pure
// functions in this package's other files. It imports the standard library,
// golang.org/x/sys/unix and the project's stdlib-only packages, nothing else
// (deps_test.go keeps it so).
package netnsenter

import (
	"context"
	"fmt"

	"github.com/claude-sandbox/claude-sandbox/internal/buildinfo"
	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
)

// Applet is the netns-enter applet.
var Applet = multicall.Applet{Name: "netns-enter", Run: run}

// GroupFile is the group database that "@GROUP" restrictions are resolved
// against (NSS sources such as LDAP are not consulted).
const GroupFile = "/etc/group"

// WhitelistPath returns the whitelist's path: buildinfo.Sysconfdir, baked in
// at build time, plus "/netns-enter". It never comes from the environment.
func WhitelistPath() string {
	return buildinfo.Sysconfdir + "/netns-enter"
}

func run(ctx context.Context, args []string, stdio multicall.Stdio) error {
	req, err := parseArgs(args)
	if err == errHelp {
		fmt.Fprintln(stdio.Out, usage)
		return nil
	}
	if err != nil {
		return err
	}
	return enter(req, WhitelistPath())
}
