// Package netnssetup is the netns-setup applet.
package netnssetup

import (
	"context"

	"github.com/claude-sandbox/claude-sandbox/internal/cli"
)

// Applet is the netns-setup applet.
var Applet = cli.Applet{Name: "netns-setup", Run: run}

func run(ctx context.Context, args []string, stdio cli.Stdio) error {
	return cli.ErrNotImplemented
}
