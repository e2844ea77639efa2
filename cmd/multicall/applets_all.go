//go:build !netnsenter_only

package main

import (
	"github.com/claude-sandbox/claude-sandbox/applets/claude"
	"github.com/claude-sandbox/claude-sandbox/applets/claude-update"
	"github.com/claude-sandbox/claude-sandbox/applets/doctor"
	"github.com/claude-sandbox/claude-sandbox/applets/git"
	"github.com/claude-sandbox/claude-sandbox/applets/gitremote"
	"github.com/claude-sandbox/claude-sandbox/applets/net"
	"github.com/claude-sandbox/claude-sandbox/applets/netns-dns"
	"github.com/claude-sandbox/claude-sandbox/applets/netns-enter"
	"github.com/claude-sandbox/claude-sandbox/applets/netns-setup"
	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
)

var table = multicall.NewTable(
	claude.Applet,
	claudeupdate.Applet,
	doctor.Applet,
	git.Applet,
	gitremote.Applet,
	net.Applet,
	netnsdns.Applet,
	netnsenter.Applet,
	netnssetup.Applet,
)
