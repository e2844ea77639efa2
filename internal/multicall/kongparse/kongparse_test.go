package kongparse

import (
	"bytes"
	"errors"
	"slices"
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

type testCommands struct {
	Help bool `short:"h" help:"Show this help."`
	Add  struct {
		Name string `arg:"" help:"The name."`
		Port Pairs  `name:"port" help:"A port."`
	} `cmd:"" help:"Add a name."`
	Del struct{} `cmd:"" help:"Delete."`
}

func TestParseCommand(t *testing.T) {
	for _, tt := range []struct {
		name  string
		args  []string
		cmd   string
		code  int
		msg   string
		help  string // in the help printed
		ports Pairs
	}{
		{"command", []string{"add", "x", "--port", "tcp", "22", "--port", "udp", "53"}, "add <name>", 0, "", "", Pairs{"tcp 22", "udp 53"}},
		{"other command", []string{"del"}, "del", 0, "", "", nil},
		{"no command", nil, "", 2, `expected one of "add", "del" (see --help)`, "", nil},
		{"one word of a pair", []string{"add", "x", "--port", "tcp"}, "", 2, "--port: want two words, got 1 (see --help)", "", nil},
		{"a flag for a word", []string{"add", "x", "--port", "--port", "tcp", "1"}, "", 2, "--port: want two words, got 0 (see --help)", "", nil},
		{"help alone", []string{"-h"}, "", 0, "", "Commands:", nil},
		{"help of a command missing its argument", []string{"add", "-h"}, "", 0, "", "Add a name.", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var f testCommands
			var out bytes.Buffer
			cmd, err := ParseCommand(&f, &f.Help, "x", "", tt.args, multicall.Stdio{Out: &out, Err: &out})
			if tt.help != "" {
				if !errors.Is(err, ErrHelp) || !strings.Contains(out.String(), tt.help) {
					t.Fatalf("ParseCommand(%q) = %v, printed %q, want the help with %q", tt.args, err, out.String(), tt.help)
				}
				return
			}
			if cmd != tt.cmd || multicall.Code(err) != tt.code || multicall.Message(err) != tt.msg {
				t.Fatalf("ParseCommand(%q) = %q, exit %d %q, want %q, exit %d %q", tt.args, cmd, multicall.Code(err), multicall.Message(err), tt.cmd, tt.code, tt.msg)
			}
			if !slices.Equal(f.Add.Port, tt.ports) {
				t.Errorf("ParseCommand(%q): ports %q, want %q", tt.args, f.Add.Port, tt.ports)
			}
		})
	}
}
