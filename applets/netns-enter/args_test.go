package netnsenter

import (
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/google/go-cmp/cmp"
)

func TestParseArgs(t *testing.T) {
	const u = "usage: netns-enter [--netns=]NAME -- CMD [ARGS...]"
	const badName = ": use 1 to 15 characters of a-z, 0-9, '-' or '_', starting with a letter or digit"
	tests := []struct {
		name    string
		args    []string
		want    request
		wantErr string
		code    int
	}{
		{name: "plain", args: []string{"agents", "--", "curl", "https://example.com"}, want: request{Name: "agents", Argv: []string{"curl", "https://example.com"}}},
		{name: "option", args: []string{"--netns=agents", "--", "bash"}, want: request{Name: "agents", Argv: []string{"bash"}}},
		{name: "args kept verbatim", args: []string{"a", "--", "sh", "-c", "", "--", " x\ny "}, want: request{Name: "a", Argv: []string{"sh", "-c", "", "--", " x\ny "}}},
		{name: "help", args: []string{"--help"}, wantErr: "help"},
		{name: "short help", args: []string{"-h"}, wantErr: "help"},
		{name: "no args", args: nil, wantErr: "missing NAME: " + u, code: 2},
		{name: "help with command", args: []string{"--help", "--", "x"}, wantErr: `unknown option "--help": ` + u, code: 2},
		{name: "other option", args: []string{"-x", "--", "x"}, wantErr: `unknown option "-x": ` + u, code: 2},
		{name: "netns without =", args: []string{"--netns", "agents", "--", "x"}, wantErr: `unknown option "--netns": ` + u, code: 2},
		{name: "dashdash first", args: []string{"--", "x"}, wantErr: "missing NAME: " + u, code: 2},
		{name: "dot dot", args: []string{"..", "--", "x"}, wantErr: `invalid namespace name ".."` + badName, code: 2},
		{name: "path", args: []string{"../../proc/1/ns/net", "--", "x"}, wantErr: `invalid namespace name "../../proc/1/ns/net"` + badName, code: 2},
		{name: "slash", args: []string{"a/b", "--", "x"}, wantErr: `invalid namespace name "a/b"` + badName, code: 2},
		{name: "empty", args: []string{"", "--", "x"}, wantErr: `invalid namespace name ""` + badName, code: 2},
		{name: "empty option", args: []string{"--netns=", "--", "x"}, wantErr: `invalid namespace name ""` + badName, code: 2},
		{name: "long", args: []string{strings.Repeat("a", 300), "--", "x"}, wantErr: `invalid namespace name "` + strings.Repeat("a", 64) + `..."` + badName, code: 2},
		{name: "cr", args: []string{"agents\r", "--", "x"}, wantErr: `invalid namespace name "agents\r"` + badName, code: 2},
		{name: "upper", args: []string{"Agents", "--", "x"}, wantErr: `invalid namespace name "Agents"` + badName, code: 2},
		{name: "unicode", args: []string{"agénts", "--", "x"}, wantErr: `invalid namespace name "agénts"` + badName, code: 2},
		{name: "missing dashdash", args: []string{"agents", "x"}, wantErr: "missing -- after NAME: " + u, code: 2},
		{name: "name only", args: []string{"agents"}, wantErr: "missing -- after NAME: " + u, code: 2},
		{name: "no command", args: []string{"agents", "--"}, wantErr: "missing CMD after --: " + u, code: 2},
		{name: "empty command", args: []string{"agents", "--", ""}, wantErr: "empty CMD: " + u, code: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseArgs(tt.args)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("parseArgs(%q) = %v, want error %q", tt.args, err, tt.wantErr)
				}
				if err != errHelp && multicall.Code(err) != tt.code {
					t.Errorf("parseArgs(%q) exit code = %d, want %d", tt.args, multicall.Code(err), tt.code)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseArgs(%q) = %v", tt.args, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("parseArgs(%q) mismatch (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

func FuzzParseArgs(f *testing.F) {
	f.Add("agents", "--", "true", "")
	f.Add("--netns=a", "--", "sh", "-c")
	f.Add("..", "--", "x", "y")
	f.Add("--help", "", "", "")
	f.Fuzz(func(t *testing.T, a, b, c, d string) {
		for n := 0; n <= 4; n++ {
			args := []string{a, b, c, d}[:n]
			req, err := parseArgs(args)
			if err != nil {
				if err != errHelp && multicall.Code(err) != multicall.ExitUsage {
					t.Fatalf("parseArgs(%q) = %v with exit code %d, want usage error", args, err, multicall.Code(err))
				}
				if strings.ContainsAny(err.Error(), "\n\r") {
					t.Fatalf("parseArgs(%q) error is not one line: %q", args, err)
				}
				continue
			}
			// Accepted: the name is valid, "--" separates, the command
			// is the rest verbatim.
			name := strings.TrimPrefix(args[0], "--netns=")
			if req.Name != name || len(args) < 3 || args[1] != "--" || req.Argv[0] == "" {
				t.Fatalf("parseArgs(%q) = %+v: accepted a malformed command line", args, req)
			}
			if !validName(req.Name) {
				t.Fatalf("parseArgs(%q) accepted name %q", args, req.Name)
			}
			if strings.Join(req.Argv, "\x00") != strings.Join(args[2:], "\x00") {
				t.Fatalf("parseArgs(%q).Argv = %q, want %q", args, req.Argv, args[2:])
			}
		}
	})
}
