// Package doctor is the doctor applet (claude-sandbox doctor, also
// claude --sandbox-doctor): it checks the whole installation in order, the
// kernel, bwrap, seccomp, systemd, netns-enter, the namespace and its
// firewall, DNS and policy, and the agent, and prints one line per check,
// ok, warn, FAIL or skip, with the command that fixes each line that is not
// ok.
//
// The checks (checks.go) are pure functions of a Host, the machine's files
// and commands; host_linux.go is the real one.
package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall/kongparse"

	"github.com/claude-sandbox/claude-sandbox/internal/buildinfo"
	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/netcfg"
	"github.com/claude-sandbox/claude-sandbox/internal/nsname"
)

// Applet is the doctor applet.
var Applet = multicall.Applet{Name: "doctor", Run: run}

// DefaultDNSName is the name the DNS check resolves: the agent's API.
const DefaultDNSName = "api.anthropic.com"

// flags is the command line.
type flags struct {
	JSON        bool   `name:"json" help:"Print the results as one JSON object instead of lines."`
	DNSName     string `name:"dns-name" help:"The name the DNS check resolves inside the namespace." default:"api.anthropic.com" placeholder:"NAME"`
	ResolveWith string `name:"resolve-with" hidden:"" help:"Internal: resolve the --dns-name with the first nameserver of FILE, and nothing else, and print the addresses (the DNS check runs this inside the namespace)." placeholder:"FILE"`
	Help        bool   `short:"h" help:"Show this help."`
}

func parseFlags(args []string, stdio multicall.Stdio) (*flags, error) {
	var f flags
	if err := kongparse.Parse(&f, &f.Help, "claude-sandbox doctor", "Check the sandbox's installation and say how to fix what is wrong. Exit status 0 unless a check FAILs.", args, stdio); err != nil {
		return nil, err
	}
	return &f, nil
}

func run(ctx context.Context, args []string, stdio multicall.Stdio) error {
	f, err := parseFlags(args, stdio)
	if errors.Is(err, kongparse.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if f.ResolveWith != "" {
		return resolve(ctx, f.ResolveWith, f.DNSName, stdio.Out)
	}
	c, err := config(os.Getenv, f.DNSName)
	if err != nil {
		return err
	}
	h, err := newHost()
	if err != nil {
		return err
	}
	results := Run(ctx, h, c)
	if err := Write(stdio.Out, results, f.JSON); err != nil {
		return err
	}
	if Failed(results) {
		return multicall.Exit(multicall.ExitFailure)
	}
	return nil
}

// config is what an installed system has, with the launcher's
// environment knobs for the namespace and the agent's directory.
func config(getenv func(string) string, dnsName string) (Config, error) {
	net := netcfg.Default(buildinfo.Sysconfdir)
	c := Config{
		Netns:          buildinfo.Netns,
		NetnsDir:       net.RunDir,
		NetnsEnter:     buildinfo.Prefix + "/bin/netns-enter",
		NetnsSetup:     buildinfo.Prefix + "/bin/netns-setup",
		Whitelist:      buildinfo.Sysconfdir + "/netns-enter",
		FirewallConfig: net.FirewallConfig,
		BinDir:         buildinfo.BinDir,
		HomeName:       buildinfo.HomeName,
		DNSName:        dnsName,
	}
	if v := getenv("CLAUDE_SBX_NETNS"); v != "" {
		if err := nsname.Check(v); err != nil {
			return c, multicall.Usagef("CLAUDE_SBX_NETNS: %w", err)
		}
		c.Netns = v
	}
	if v := getenv("CLAUDE_SBX_BINDIR"); v != "" {
		c.BinDir = v
	}
	c.ResolvConf = net.ResolvConfPath(c.Netns)
	self, err := os.Executable()
	if err != nil {
		return c, fmt.Errorf("cannot find this program for the DNS check: %w", err)
	}
	c.Self = self
	return c, nil
}

// Failed reports whether a check FAILed.
func Failed(results []Result) bool {
	for _, r := range results {
		if r.Status == Fail {
			return true
		}
	}
	return false
}

// Write prints the results, one line each, or as JSON.
func Write(w io.Writer, results []Result, asJSON bool) error {
	if asJSON {
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(struct {
			OK     bool     `json:"ok"`
			Checks []Result `json:"checks"`
		}{!Failed(results), results})
	}
	for _, r := range results {
		line := fmt.Sprintf("%-4s  %-13s %s", r.Status, r.Check, r.Message)
		if r.Fix != "" {
			line += "; fix: " + r.Fix
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}
