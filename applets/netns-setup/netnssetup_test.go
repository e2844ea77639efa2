package netnssetup

import (
	"context"
	"io"
	"os"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/buildinfo"
	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/netcfg"
)

func TestRunUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no args", nil, 2, "usage: netns-setup up|down|status NAME"},
		{"one arg", []string{"up"}, 2, "usage: netns-setup up|down|status NAME"},
		{"three args", []string{"up", "a", "b"}, 2, "usage: netns-setup up|down|status NAME"},
		{"unknown verb", []string{"start", "agents"}, 2, `unknown command "start"; usage: netns-setup up|down|status NAME`},
		{"bad name", []string{"up", "Agents"}, 2, `invalid namespace name "Agents": use 1 to 15 characters of a-z, 0-9, '-' or '_', starting with a letter or digit`},
		{"too long", []string{"down", "abcdefghijklmnop"}, 2, `invalid namespace name "abcdefghijklmnop": use 1 to 15 characters of a-z, 0-9, '-' or '_', starting with a letter or digit`},
		{"unknown flag", []string{"--verbose", "up", "agents"}, 2, "unknown flag --verbose; usage: netns-setup up|down|status NAME"},
		{"help", []string{"--help"}, 2, "usage: netns-setup up|down|status NAME"},
		{"-h", []string{"up", "agents", "-h"}, 2, "usage: netns-setup up|down|status NAME"},
		{"bad bridge flag", []string{"--testonly-bridge-addr=10.10.0.1", "up", "agents"}, 2, `--testonly-bridge-addr: netip.ParsePrefix("10.10.0.1"): no '/'`},
		{"test-only flag by its old name", []string{"--run-dir=/tmp", "up", "agents"}, 2, "unknown flag --run-dir; usage: netns-setup up|down|status NAME"},
		{"denials without a name", []string{"denials"}, 2, "usage: netns-setup denials NAME [--follow]"},
		{"denials with two names", []string{"denials", "a", "b"}, 2, "usage: netns-setup denials NAME [--follow]"},
		{"--follow without denials", []string{"up", "agents", "--follow"}, 2, "usage: netns-setup denials NAME [--follow]"},
		{"denials bad name, following", []string{"denials", "Agents", "-f"}, 2, `invalid namespace name "Agents": use 1 to 15 characters of a-z, 0-9, '-' or '_', starting with a letter or digit`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := run(context.Background(), tt.args, multicall.Stdio{In: os.Stdin, Out: io.Discard, Err: io.Discard})
			if multicall.Code(err) != tt.code || multicall.Message(err) != tt.msg {
				t.Fatalf("run(%q) = exit %d %q, want exit %d %q", tt.args, multicall.Code(err), multicall.Message(err), tt.code, tt.msg)
			}
		})
	}
	if os.Geteuid() != 0 {
		err := run(context.Background(), []string{"up", "agents"}, multicall.Stdio{Out: io.Discard, Err: io.Discard})
		if want := "must be run as root (netns@agents.service runs it)"; multicall.Code(err) != 1 || multicall.Message(err) != want {
			t.Fatalf("run as non-root = exit %d %q, want 1 %q", multicall.Code(err), multicall.Message(err), want)
		}
	}
}

func TestBridgeMissing(t *testing.T) {
	cfg := netcfg.Default(buildinfo.Sysconfdir)
	tests := []struct {
		name              string
		systemd, networkd bool
		want              string
	}{
		{"networkd runs", true, true, "bridge br-netns does not exist although systemd-networkd runs: is br-netns.netdev installed (make install-network)? then: networkctl reload"},
		{"systemd without networkd", true, false, "bridge br-netns does not exist: start systemd-networkd (systemctl enable --now systemd-networkd), which creates it from br-netns.netdev"},
		{"no systemd", false, false, "bridge br-netns does not exist and systemd-networkd is not running: create it with ip link add br-netns type bridge && ip address add 10.10.0.1/16 dev br-netns && ip link set br-netns up"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := bridgeMissing(cfg, tt.systemd, tt.networkd).Error(); got != tt.want {
				t.Fatalf("bridgeMissing = %q, want %q", got, tt.want)
			}
		})
	}
}
