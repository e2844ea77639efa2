//go:build !linux

package claude

import (
	"context"
	"errors"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
)

func launch(ctx context.Context, o options, stdio multicall.Stdio) error {
	return errors.ErrUnsupported
}
