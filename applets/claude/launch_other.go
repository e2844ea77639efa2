//go:build !linux

package claude

import (
	"context"
	"errors"

	"github.com/claude-sandbox/claude-sandbox/internal/cli"
)

func launch(ctx context.Context, o options, stdio cli.Stdio) error {
	return errors.ErrUnsupported
}
