//go:build !linux

package netnsdns

import (
	"context"
	"errors"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
)

func serve(context.Context, options, multicall.Stdio) error { return errors.ErrUnsupported }
