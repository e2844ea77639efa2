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
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/applets/netns-setup"
	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
)

const roleEnv = "NETNS_TEST_ROLE"

// noNftablesEnv makes the netns-setup role run as on a kernel without
// nf_tables: see denyNftables.
const noNftablesEnv = "NETNS_TEST_NO_NFTABLES"

// denyNftables installs a seccomp filter on every thread that makes
// socket(AF_NETLINK, *, NETLINK_NETFILTER) fail with EPROTONOSUPPORT, what
// the kernel answers when nfnetlink is not built or cannot be loaded.
// Everything else, rtnetlink included, is allowed.
func denyNftables() error {
	prog, err := bpf.Assemble([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 0, Size: 4}, // nr
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.SYS_SOCKET, SkipTrue: 4},
		bpf.LoadAbsolute{Off: 16, Size: 4}, // args[0], low half
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.AF_NETLINK, SkipTrue: 2},
		bpf.LoadAbsolute{Off: 32, Size: 4}, // args[2], low half
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.NETLINK_NETFILTER, SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EPROTONOSUPPORT)},
	})
	if err != nil {
		return err
	}
	filter := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		filter[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return fmt.Errorf("seccomp: %w", e)
	}
	return nil
}

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "netns-setup":
		if os.Getenv(noNftablesEnv) != "" {
			if err := denyNftables(); err != nil {
				fmt.Fprintf(os.Stderr, "test: %v\n", err)
				os.Exit(125)
			}
		}
		// What the dispatcher does for the applet.
		err := netnssetup.Applet.Run(context.Background(), os.Args[1:], multicall.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
		if msg := multicall.Message(err); msg != "" {
			fmt.Fprintf(os.Stderr, "netns-setup: %s\n", msg)
		}
		os.Exit(multicall.Code(err))
	case "probe":
		os.Exit(probeMain())
	case "netctl":
		os.Exit(netctlMain())
	case "flood":
		os.Exit(floodMain())
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
