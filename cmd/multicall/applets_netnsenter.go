//go:build netnsenter_only

// The setuid netns-enter binary is built with -tags netnsenter_only so that
// it links no package but the standard library, golang.org/x/sys/unix and
// its own: no third-party init() runs with privilege.
package main

import (
	"github.com/claude-sandbox/claude-sandbox/applets/netns-enter"
	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
)

var table = multicall.NewTable(netnsenter.Applet)
