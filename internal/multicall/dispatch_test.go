package multicall

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// fake returns an applet that records its arguments.
func fake(name string, got *[]string, err error) Applet {
	return Applet{Name: name, Run: func(ctx context.Context, args []string, stdio Stdio) error {
		*got = append([]string{name}, args...)
		return err
	}}
}

func testTable(got *[]string) Table {
	return NewTable(
		fake("claude", got, nil),
		fake("claude-update", got, nil),
		fake(PrivilegedApplet, got, nil),
		fake("netns-setup", got, nil),
	)
}

func TestSelect(t *testing.T) {
	const list = "claude, claude-update, netns-enter, netns-setup"
	tests := []struct {
		name       string
		argv       []string
		privileged bool
		wantApplet string
		wantArgs   []string
		wantErr    string
	}{
		{name: "argv0", argv: []string{"/usr/local/bin/claude", "--shell"}, wantApplet: "claude", wantArgs: []string{"--shell"}},
		{name: "argv1", argv: []string{"claude-sandbox", "claude-update", "--check"}, wantApplet: "claude-update", wantArgs: []string{"--check"}},
		{name: "argv0 wins over argv1", argv: []string{"claude", "netns-setup"}, wantApplet: "claude", wantArgs: []string{"netns-setup"}},
		{name: "list", argv: []string{"claude-sandbox", "--list"}, wantErr: "list"},
		{name: "unknown", argv: []string{"claude-sandbox", "nope"}, wantErr: `unknown applet "nope"; applets: ` + list},
		{name: "none", argv: []string{"claude-sandbox"}, wantErr: "no applet named; run as one of: " + list},
		{name: "empty argv", argv: nil, wantErr: "no applet named; run as one of: " + list},
		{name: "privileged argv0 claude", argv: []string{"claude", "--shell"}, privileged: true, wantApplet: PrivilegedApplet, wantArgs: []string{"--shell"}},
		{name: "privileged argv1 claude", argv: []string{"claude-sandbox", "claude"}, privileged: true, wantApplet: PrivilegedApplet, wantArgs: []string{"claude"}},
		{name: "privileged list", argv: []string{"claude-sandbox", "--list"}, privileged: true, wantApplet: PrivilegedApplet, wantArgs: []string{"--list"}},
		{name: "privileged empty argv", argv: nil, privileged: true, wantApplet: PrivilegedApplet, wantArgs: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			a, args, name, err := testTable(&got).Select(tt.argv, tt.privileged)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Select(%q, %v) error = %v, want %q", tt.argv, tt.privileged, err, tt.wantErr)
				}
				if err != errList && Code(err) != ExitUsage {
					t.Errorf("Select(%q) exit code = %d, want 2", tt.argv, Code(err))
				}
				return
			}
			if err != nil {
				t.Fatalf("Select(%q, %v) = %v", tt.argv, tt.privileged, err)
			}
			if a.Name != tt.wantApplet || name != tt.wantApplet || strings.Join(args, "\x00") != strings.Join(tt.wantArgs, "\x00") {
				t.Errorf("Select(%q, %v) = %s %q (name %q), want %s %q", tt.argv, tt.privileged, a.Name, args, name, tt.wantApplet, tt.wantArgs)
			}
		})
	}
}

// TestSelectPrivilegedEveryName: with elevated credentials, every applet
// name (and others) as argv[0] or argv[1] selects netns-enter.
func TestSelectPrivilegedEveryName(t *testing.T) {
	var got []string
	tab := testTable(&got)
	for _, n := range append(tab.Names(), "", "claude-sandbox", "/x/claude", "--list") {
		for _, argv := range [][]string{{n, "a"}, {"claude-sandbox", n}} {
			a, _, name, err := tab.Select(argv, true)
			if err != nil || a.Name != PrivilegedApplet || name != PrivilegedApplet {
				t.Errorf("Select(%q, privileged) = %q, %v; want %s", argv, a.Name, err, PrivilegedApplet)
			}
		}
	}
}

func TestSelectPrivilegedWithoutApplet(t *testing.T) {
	var got []string
	tab := NewTable(fake("claude", &got, nil))
	_, _, _, err := tab.Select([]string{"claude"}, true)
	if err == nil || Code(err) != ExitUsage || err.Error() != "running with elevated privileges, but this build has no netns-enter applet" {
		t.Errorf("Select(claude, privileged) without netns-enter = %v", err)
	}
}

func TestNewTablePanics(t *testing.T) {
	for _, tt := range []struct {
		name    string
		applets []Applet
	}{
		{"duplicate", []Applet{{Name: "a", Run: func(context.Context, []string, Stdio) error { return nil }}, {Name: "a", Run: func(context.Context, []string, Stdio) error { return nil }}}},
		{"no name", []Applet{{Run: func(context.Context, []string, Stdio) error { return nil }}}},
		{"no run", []Applet{{Name: "a"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("NewTable(%s) did not panic", tt.name)
				}
			}()
			NewTable(tt.applets...)
		})
	}
}

// TestMain runs Main unprivileged (the test binary is not setuid) and
// checks the one line it prints and the exit code.
func TestMainOutput(t *testing.T) {
	if Privileged() {
		t.Skip("test binary runs with elevated credentials")
	}
	var got []string
	tab := NewTable(
		fake("ok", &got, nil),
		fake("fails", &got, errors.New("something broke: details")),
		fake("usage", &got, Usagef("bad flag %q", "-x")),
		fake("quiet", &got, Exit(3)),
	)
	tests := []struct {
		name          string
		argv          []string
		code          int
		stdout, stder string
	}{
		{"ok", []string{"ok", "a"}, 0, "", ""},
		{"error", []string{"/bin/fails"}, 1, "", "fails: something broke: details\n"},
		{"usage", []string{"x", "usage"}, 2, "", "usage: bad flag \"-x\"\n"},
		{"silent exit", []string{"quiet"}, 3, "", ""},
		{"list", []string{"x", "--list"}, 0, "fails\nok\nquiet\nusage\n", ""},
		{"unknown", []string{"/bin/mc", "nope"}, 2, "", "mc: unknown applet \"nope\"; applets: fails, ok, quiet, usage\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Main(context.Background(), tab, tt.argv, Stdio{Out: &out, Err: &errb})
			if code != tt.code || out.String() != tt.stdout || errb.String() != tt.stder {
				t.Errorf("Main(%q) = %d, stdout %q, stderr %q; want %d, %q, %q", tt.argv, code, out.String(), errb.String(), tt.code, tt.stdout, tt.stder)
			}
		})
	}
}
