// Package kongparse parses an applet's command line with kong the way every
// applet here does: kong never exits the process, help is a flag the applet
// handles, and a parse error is a usage error (exit 2). It is the one flag
// library of the applets that are not setuid.
//
// It is not linked into the setuid netns-enter build, which parses its
// arguments by hand (internal/multicall must stay free of kong for that reason).
//
// Flags that exist only for tests are named testonly-NAME and hidden:"".
package kongparse

import (
	"errors"
	"fmt"
	"io"

	"github.com/alecthomas/kong"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
)

// ErrHelp means Parse printed the help; the applet exits 0.
var ErrHelp = errors.New("help printed")

// Parse parses args into target, a kong struct. help points at target's
// help flag: when it is set after parsing, Parse prints the usage to
// stdio.Out and returns ErrHelp.
func Parse(target any, help *bool, name, description string, args []string, stdio multicall.Stdio) error {
	parser, err := newParser(target, name, description, stdio.Out, stdio.Err)
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

// ParseCommand is Parse for a target with commands (cmd:"" fields): it
// returns the command chosen, as kong names it ("allow <name>"), or ""
// when only the help was asked for.
func ParseCommand(target any, help *bool, name, description string, args []string, stdio multicall.Stdio) (string, error) {
	parser, err := newParser(target, name, description, stdio.Out, stdio.Err)
	if err != nil {
		return "", err
	}
	ctx, err := parser.Parse(args)
	var pe *kong.ParseError
	if ctx == nil && errors.As(err, &pe) {
		ctx = pe.Context // a command or its argument missing: kong has applied the flags
	}
	if ctx != nil && *help {
		// -h alone, or after a command: that command's help.
		if err := ctx.PrintUsage(false); err != nil {
			return "", err
		}
		return "", ErrHelp
	}
	if err != nil {
		return "", multicall.Usagef("%w (see --help)", err)
	}
	return ctx.Command(), nil
}

// Pairs is a repeatable option of two words (--port tcp 443): each use
// adds "WORD WORD".
type Pairs []string

// Decode takes the option's two words.
func (p *Pairs) Decode(ctx *kong.DecodeContext) error {
	var w [2]string
	for i := range w {
		t := ctx.Scan.Peek()
		s, ok := t.Value.(string)
		if !t.IsValue() || !ok {
			return fmt.Errorf("want two words, got %d", i)
		}
		ctx.Scan.Pop()
		w[i] = s
	}
	*p = append(*p, w[0]+" "+w[1])
	return nil
}

// ParseUsage parses args into target, a kong struct, for an applet whose
// whole help is its usage line (netns-setup, netns-dns): a parse error is
// the usage error "ERROR; USAGE", and help (target's help flag, -h or
// --help) the usage error "USAGE", both exit 2.
func ParseUsage(target any, help *bool, name, usage string, args []string) error {
	parser, err := newParser(target, name, "", io.Discard, io.Discard)
	if err != nil {
		return err
	}
	if _, err := parser.Parse(args); err != nil {
		return multicall.Usagef("%w; %s", err, usage)
	}
	if *help {
		return multicall.Usagef("%s", usage)
	}
	return nil
}

// newParser is kong as every applet uses it: it never exits the process
// and has no help flag of its own. An error is one in target's tags.
func newParser(target any, name, description string, out, errw io.Writer) (*kong.Kong, error) {
	return kong.New(target,
		kong.Name(name),
		kong.Description(description),
		kong.Writers(out, errw),
		kong.NoDefaultHelp(),
		kong.Exit(func(int) {}),
	)
}
