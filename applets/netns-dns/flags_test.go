package netnsdns

import (
	"context"
	"io"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
)

func TestRunUsage(t *testing.T) {
	const usageLine = "usage: netns-dns (no arguments: serves every namespace netns-setup up made, in the foreground)"
	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"argument", []string{"agents"}, `unexpected argument agents; ` + usageLine},
		{"unknown flag", []string{"--verbose"}, "unknown flag --verbose; " + usageLine},
		{"help", []string{"--help"}, usageLine},
		{"-h", []string{"-h"}, usageLine},
		{"test-only flag by its old name", []string{"--listen=127.0.0.1:53"}, "unknown flag --listen; " + usageLine},
		{"bad listen", []string{"--testonly-listen=10.10.0.1"}, "--testonly-listen: not an ip:port"},
		{"bad pin floor", []string{"--testonly-pin-floor=soon"}, `--testonly-pin-floor: expected duration but got "soon": time: invalid duration "soon"; ` + usageLine},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := run(context.Background(), tt.args, multicall.Stdio{Out: io.Discard, Err: io.Discard})
			if multicall.Code(err) != multicall.ExitUsage || multicall.Message(err) != tt.msg {
				t.Errorf("run(%q) = exit %d %q, want exit 2 %q", tt.args, multicall.Code(err), multicall.Message(err), tt.msg)
			}
		})
	}
}
