//go:build !netnsenter_only

package main

import (
	"github.com/claude-sandbox/claude-sandbox/applets/claude"
	"github.com/claude-sandbox/claude-sandbox/applets/claudeupdate"
	"github.com/claude-sandbox/claude-sandbox/applets/netnsenter"
	"github.com/claude-sandbox/claude-sandbox/applets/netnssetup"
	"github.com/claude-sandbox/claude-sandbox/internal/dispatch"
)

var table = dispatch.NewTable(
	claude.Applet,
	claudeupdate.Applet,
	netnsenter.Applet,
	netnssetup.Applet,
)
