package claudeupdate

import (
	"os"
	"strings"
	"testing"
)

func TestParseConf(t *testing.T) {
	tests := []struct {
		name, in, want, err string
	}{
		{name: "empty", in: ""},
		{name: "comments", in: "# the default source\n\n   \n", want: ""},
		{name: "npm", in: "# networks that block downloads.claude.ai\nsource npm\n", want: "npm"},
		{name: "release, spaced", in: "  source\trelease  ", want: "release"},
		{name: "unknown setting", in: "source npm\nregistry https://evil.example/\n", err: `/etc/claude-update.conf:2: unknown setting registry: the only one is source (release or npm)`},
		{name: "bad source", in: "\nsource pip\n", err: `/etc/claude-update.conf:2: source pip: want source release or source npm`},
		{name: "extra word", in: "source npm release\n", err: `/etc/claude-update.conf:1: source npm release: want source release or source npm`},
		{name: "no value", in: "source\n", err: `/etc/claude-update.conf:1: source: want source release or source npm`},
		{name: "twice", in: "source npm\nsource release\n", err: `/etc/claude-update.conf:2: source set twice: keep one source line`},
		{name: "escape sequence", in: "\x1b[2Jsource npm\n", err: `/etc/claude-update.conf:1: unknown setting "\x1b[2Jsource": the only one is source (release or npm)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseConf([]byte(tt.in), "/etc/claude-update.conf")
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("parseConf(%q) = %+v, %v; want error %q", tt.in, c, err, tt.err)
				}
				return
			}
			if err != nil || c.source != tt.want {
				t.Fatalf("parseConf(%q) = %+v, %v; want source %q", tt.in, c, err, tt.want)
			}
		})
	}
}

func FuzzParseConf(f *testing.F) {
	for _, s := range []string{"", "source npm\n", "# x\nsource release", "source pip", "source npm\nsource npm", "registry x"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parseConf(data, "/etc/claude-update.conf")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "/etc/claude-update.conf:") || strings.Contains(err.Error(), "\n") {
				t.Errorf("parseConf(%q) = %q: want one line naming the file", data, err)
			}
			return
		}
		if c.source != "" && c.source != "npm" && c.source != "release" {
			t.Errorf("parseConf(%q) = source %q", data, c.source)
		}
	})
}

// confFixture serves release 2.1.100 and npm 2.1.101, so that the version
// installed tells which source was used.
func confFixture(t *testing.T) *fixture {
	f := newFixture(t)
	f.release("2.1.100")
	f.channel("latest", "2.1.100")
	tb := f.npmTarball("2.1.101", fakeAgent("2.1.101", agentSize))
	f.npmPublish(map[string]string{"latest": "2.1.101"}, npmVersion{version: "2.1.101", tarball: tb})
	return f
}

// TestConfSource: the configuration file's source line sets the default
// source; the command line wins over it.
func TestConfSource(t *testing.T) {
	f := confFixture(t)
	if err := os.WriteFile(f.conf, []byte("# this network blocks downloads.claude.ai\nsource npm\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.mustRun("--source", "release")
	if f.current() != "claude.2.1.100" {
		t.Errorf("--source release with source npm in %s: claude -> %s, want claude.2.1.100", f.conf, f.current())
	}
	f.mustRun()
	if f.current() != "claude.2.1.101" {
		t.Errorf("source npm in %s: claude -> %s, want claude.2.1.101 from npm", f.conf, f.current())
	}
	// --registry needs no --source when the file says npm.
	if out, code, msg := f.runCode("--check", "--registry", f.registry); code != 0 {
		t.Errorf("--check --registry with source npm in the file = %d %q %q, want 0", code, out, msg)
	}
}

// TestConfBadLine: a line the file may not hold stops the run with one line
// naming file:line, before anything is fetched; --rollback and --list do
// not read the file.
func TestConfBadLine(t *testing.T) {
	f := confFixture(t)
	f.mustRun()
	if err := os.WriteFile(f.conf, []byte("source npm\nregistry=https://evil.example/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := f.snapshot()
	out, code, msg := f.runCode()
	want := f.conf + ":2: unknown setting registry=https://evil.example/: the only one is source (release or npm)"
	if code != 1 || msg != want {
		t.Errorf("claude-update = %d %q\nwant 1 %q", code, msg, want)
	}
	if out != "" {
		t.Errorf("output = %q, want none", out)
	}
	f.assertUnchanged(before)
	if _, msg := f.run("--list"); msg != "" {
		t.Errorf("--list with a bad %s: %s", f.conf, msg)
	}
}
