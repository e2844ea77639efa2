package netctl

import (
	"fmt"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/netpolicy"
	"github.com/claude-sandbox/claude-sandbox/internal/nsname"
	"github.com/claude-sandbox/claude-sandbox/internal/quote"
)

// Command is how users run the client of this protocol.
const Command = "claude-sandbox net"

// Why a denial cannot be allowed by its user.
const (
	WhyDrop     = "an address, not a name: only the admin can allow it (an allow line in netns-firewall.conf)"
	WhyNotName  = "no domain line can allow this name"
	WhyNotYours = "the admin's settings forbid it (a deny line, or user-approve no, in netns-firewall.conf)"
)

// Advice returns the command that allows d's name with scope, naming
// namespace ns unless it is "" (the command's default), or why no command
// can. The name is checked as a domain line would check it, so that the
// command is safe to paste into a shell as it is printed.
func Advice(d Denial, scope, ns string) (cmd, why string) {
	switch {
	case d.Name == "":
		return "", WhyDrop
	case netpolicy.CheckDomainName(d.Name) != nil || ns != "" && !nsname.Valid(ns):
		return "", WhyNotName
	case !d.Approvable:
		return "", WhyNotYours
	}
	cmd = fmt.Sprintf("%s allow %s --%s", Command, d.Name, scope)
	if ns != "" {
		cmd += " --namespace " + ns
	}
	if strings.HasPrefix(d.Name, "-") {
		// A name that reads as a flag goes last, after "--".
		cmd = strings.Replace(cmd, " allow "+d.Name, " allow", 1) + " -- " + d.Name
	}
	return cmd, ""
}

// What is a denial as a user reads it: "refused A NAME" or "dropped tcp
// ADDR:PORT", with names from outside quoted.
func What(d Denial) string {
	if d.Name == "" {
		return "dropped " + quote.String(d.Drop)
	}
	if d.Type != "" {
		return "refused " + quote.String(d.Type) + " " + quote.String(d.Name)
	}
	return "refused " + quote.String(d.Name)
}
