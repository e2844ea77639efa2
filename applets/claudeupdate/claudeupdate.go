// Package claudeupdate is the claude-update applet.
package claudeupdate

import (
	"context"

	"github.com/claude-sandbox/claude-sandbox/internal/cli"
)

// Applet is the claude-update applet.
var Applet = cli.Applet{Name: "claude-update", Run: run}

func run(ctx context.Context, args []string, stdio cli.Stdio) error {
	return cli.ErrNotImplemented
}
