//go:build linux

// Package network holds the root tests of netns-setup and its firewall. Every
// test builds its own throwaway world of network namespaces (a "host" with
// br-netns, "the internet", "the LAN") and never touches the machine's own
// network.
//
// The test binary plays three parts, chosen by NETNS_TEST_ROLE: the tests;
// netns-setup (the applet, run with nsenter inside a test's "host"); and
// the probe that runs inside a sandbox namespace as the unprivileged user.
package network

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/applets/netnssetup"
	"github.com/claude-sandbox/claude-sandbox/internal/cli"
)

const roleEnv = "NETNS_TEST_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "netns-setup":
		// What the dispatcher does for the applet.
		err := netnssetup.Applet.Run(context.Background(), os.Args[1:], cli.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
		if msg := cli.Message(err); msg != "" {
			fmt.Fprintf(os.Stderr, "netns-setup: %s\n", msg)
		}
		os.Exit(cli.Code(err))
	case "probe":
		os.Exit(probeMain())
	}
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

// selfBinary returns a copy of the test binary that every user can run (the
// one go test built is in a 0700 directory).
func selfBinary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "netns-test-bin"); binErr != nil {
			return
		}
		if binErr = os.Chmod(binDir, 0o755); binErr != nil {
			return
		}
		var src *os.File
		if src, binErr = os.Open("/proc/self/exe"); binErr != nil {
			return
		}
		defer src.Close()
		binPath = filepath.Join(binDir, "network.test")
		var dst *os.File
		if dst, binErr = os.OpenFile(binPath, os.O_CREATE|os.O_WRONLY, 0o755); binErr != nil {
			return
		}
		if _, binErr = io.Copy(dst, src); binErr == nil {
			binErr = dst.Close()
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}
