// Package kongparse parses an applet's command line with kong the way every
// applet here does: kong never exits the process, help is a flag the applet
// handles, and a parse error is a usage error (exit 2).
//
// It is not linked into the setuid netns-enter build, which parses its
// arguments by hand (internal/multicall must stay free of kong for that reason).
package kongparse

import (
	"errors"

	"github.com/alecthomas/kong"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
)

// ErrHelp means Parse printed the help; the applet exits 0.
var ErrHelp = errors.New("help printed")

// Parse parses args into target, a kong struct. help points at target's
// help flag: when it is set after parsing, Parse prints the usage to
// stdio.Out and returns ErrHelp.
func Parse(target any, help *bool, name, description string, args []string, stdio multicall.Stdio) error {
	parser, err := kong.New(target,
		kong.Name(name),
		kong.Description(description),
		kong.Writers(stdio.Out, stdio.Err),
		kong.NoDefaultHelp(),
		kong.Exit(func(int) {}),
	)
	if err != nil {
		return err
	}
	ctx, err := parser.Parse(args)
	if err != nil {
		return multicall.Usagef("%w (see --help)", err)
	}
	if *help {
		if err := ctx.PrintUsage(false); err != nil {
			return err
		}
		return ErrHelp
	}
	return nil
}
