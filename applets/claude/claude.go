// Package claude is the claude applet.
package claude

import (
	"context"

	"github.com/claude-sandbox/claude-sandbox/internal/cli"
)

// Applet is the claude applet.
var Applet = cli.Applet{Name: "claude", Run: run}

func run(ctx context.Context, args []string, stdio cli.Stdio) error {
	return cli.ErrNotImplemented
}
