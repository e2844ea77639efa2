//go:build !linux

package netnssetup

import (
	"context"
	"errors"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/netcfg"
)

func up(context.Context, netcfg.Config, string, multicall.Stdio) error { return errors.ErrUnsupported }
func down(context.Context, netcfg.Config, string, multicall.Stdio) error {
	return errors.ErrUnsupported
}
func status(context.Context, netcfg.Config, string, multicall.Stdio) error {
	return errors.ErrUnsupported
}
func guard(context.Context, netcfg.Config, string, multicall.Stdio) error {
	return errors.ErrUnsupported
}
