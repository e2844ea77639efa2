// Package claude is the claude applet: it runs the Claude Code agent (or,
// with --shell, a login shell) inside a bubblewrap sandbox, through
// systemd-run and netns-enter where those are available.
package claude

import (
	"context"
	"fmt"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
)

// Applet is the claude applet.
var Applet = multicall.Applet{Name: "claude", Run: run}

// Usage lists the launcher's own flags. Everything else is the agent's.
const Usage = `usage: claude [SANDBOX FLAGS] [AGENT ARGS...]
       claude [SANDBOX FLAGS] --shell [SHELL ARGS...]

Sandbox flags (only before the first other argument):
  --shell                    run $SHELL -l (or /bin/sh) in the sandbox instead of the agent
  --sandbox-dry-run          print the chain that would run, one argument per line, and exit
  --sandbox-seccomp[=table]  print the seccomp policy (with ~/.claude-sandbox-init applied)
  --sandbox-seccomp=bpf      write the raw seccomp program to stdout
  --sandbox-doctor [--json]  check the installation (claude-sandbox doctor) and exit
  --sandbox-network=host     run in the host's network, not the agents namespace
  --sandbox-help             this text

Agent flags the launcher acts on:
  -w, --worktree [NAME]      run the session in the worktree .claude/worktrees/NAME
                             of the checkout (branch worktree-NAME), made with your git

Environment: CLAUDE_SBX_BINDIR, CLAUDE_SBX_HOME, CLAUDE_SBX_TMP, CLAUDE_SBX_NETNS.
Configuration: ~/.claude-sandbox-init.
`

// mode is what the launcher was asked to do.
type mode int

const (
	modeRun mode = iota
	modeDryRun
	modeSeccompTable
	modeSeccompBPF
	modeHelp
	modeDoctor
)

// options are the parsed command line.
type options struct {
	mode        mode
	shell       bool
	hostNetwork bool
	args        []string
	// worktree is the agent's -w, taken out of args.
	worktree *worktreeFlag
}

// parseArgs takes the launcher's flags from the front of args. Flags of
// ours start with --sandbox- (or are --shell, which ends them); the first
// other argument and everything after it belong to the agent, verbatim.
func parseArgs(args []string) (options, error) {
	var o options
	set := func(m mode, flag string) error {
		if o.mode != modeRun && o.mode != m {
			return multicall.Usagef("%s: conflicts with an earlier --sandbox- flag", flag)
		}
		o.mode = m
		return nil
	}
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--shell" {
			o.shell = true
			i++
			break
		}
		if !strings.HasPrefix(a, "--sandbox-") {
			break
		}
		var err error
		switch a {
		case "--sandbox-dry-run":
			err = set(modeDryRun, a)
		case "--sandbox-seccomp", "--sandbox-seccomp=table":
			err = set(modeSeccompTable, a)
		case "--sandbox-seccomp=bpf":
			err = set(modeSeccompBPF, a)
		case "--sandbox-help":
			err = set(modeHelp, a)
		case "--sandbox-doctor":
			err = set(modeDoctor, a)
		case "--sandbox-network=host":
			o.hostNetwork = true
		default:
			if strings.HasPrefix(a, "--sandbox-seccomp=") {
				return o, multicall.Usagef("%s: want --sandbox-seccomp=table or --sandbox-seccomp=bpf", a)
			}
			return o, multicall.Usagef("unknown flag %s (see claude --sandbox-help)", a)
		}
		if err != nil {
			return o, err
		}
	}
	o.args = args[i:]
	if !o.shell {
		var err error
		if o.worktree, o.args, err = takeWorktree(o.args); err != nil {
			return o, err
		}
	}
	return o, nil
}

func run(ctx context.Context, args []string, stdio multicall.Stdio) error {
	o, err := parseArgs(args)
	if err != nil {
		return err
	}
	if o.mode == modeHelp {
		_, err := fmt.Fprint(stdio.Out, Usage)
		return err
	}
	if o.mode == modeDoctor {
		return runDoctor(o.args)
	}
	return launch(ctx, o, stdio)
}
