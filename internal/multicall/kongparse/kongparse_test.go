package kongparse

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
)

type testFlags struct {
	Name string `help:"A name."`
	Dir  string `name:"testonly-dir" hidden:""`
	Help bool   `short:"h" help:"Show this help."`
}

func TestParseUsage(t *testing.T) {
	const usage = "usage: x [--name=N]"
	tests := []struct {
		name string
		args []string
		code int
		msg  string
		want testFlags
	}{
		{"ok", []string{"--name=a", "--testonly-dir", "/d"}, 0, "", testFlags{Name: "a", Dir: "/d"}},
		{"unknown flag", []string{"--zzzzzz"}, 2, "unknown flag --zzzzzz; " + usage, testFlags{}},
		{"argument", []string{"extra"}, 2, "unexpected argument extra; " + usage, testFlags{}},
		{"help", []string{"--help"}, 2, usage, testFlags{Help: true}},
		{"-h", []string{"-h"}, 2, usage, testFlags{Help: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f testFlags
			err := ParseUsage(&f, &f.Help, "x", usage, tt.args)
			if multicall.Code(err) != tt.code || multicall.Message(err) != tt.msg {
				t.Fatalf("ParseUsage(%q) = exit %d %q, want exit %d %q", tt.args, multicall.Code(err), multicall.Message(err), tt.code, tt.msg)
			}
			if err == nil && f != tt.want {
				t.Errorf("ParseUsage(%q) set %+v, want %+v", tt.args, f, tt.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	var out bytes.Buffer
	var f testFlags
	err := Parse(&f, &f.Help, "x", "Does x.", []string{"--help"}, multicall.Stdio{Out: &out})
	if !errors.Is(err, ErrHelp) || !strings.Contains(out.String(), "--name=STRING") || strings.Contains(out.String(), "testonly") {
		t.Errorf("Parse(--help) = %v, printed %q; want ErrHelp and the usage without the hidden flag", err, out.String())
	}
	err = Parse(&f, &f.Help, "x", "Does x.", []string{"--zzzzzz"}, multicall.Stdio{Out: &out})
	if multicall.Code(err) != 2 || multicall.Message(err) != "unknown flag --zzzzzz (see --help)" {
		t.Errorf("Parse(--zzzzzz) = exit %d %q", multicall.Code(err), multicall.Message(err))
	}
}
