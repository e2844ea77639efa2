// Package netnsenter is the netns-enter applet.
package netnsenter

import (
	"context"

	"github.com/claude-sandbox/claude-sandbox/internal/cli"
)

// Applet is the netns-enter applet.
var Applet = cli.Applet{Name: "netns-enter", Run: run}

func run(ctx context.Context, args []string, stdio cli.Stdio) error {
	return cli.ErrNotImplemented
}
