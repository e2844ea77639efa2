//go:build !linux

package netnsdns

import (
	"context"
	"errors"

	"github.com/claude-sandbox/claude-sandbox/internal/cli"
)

func serve(context.Context, options, cli.Stdio) error { return errors.ErrUnsupported }
