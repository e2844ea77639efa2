package netnssetup

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/netcfg"
)

// TestPrintable feeds the escape sequences a sandbox can put in a name it
// looks up into a denial line, and asserts that each field carrying one
// is quoted (and so neither drives the terminal nor forges a line) while
// the rest of the line, the advice included, reads as logged.
func TestPrintable(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "t refused A x.example: allow with: domain x.example",
			"t refused A x.example: allow with: domain x.example"},
		{"clear screen", "t refused A x\x1b[2J.test: allow with: domain x\x1b[2J.test",
			`t refused A "x\x1b[2J.test:" allow with: domain "x\x1b[2J.test"`},
		{"window title", "t refused A \x1b]0;owned\x07: allow with: domain \x1b]0;owned\x07",
			`t refused A "\x1b]0;owned\a:" allow with: domain "\x1b]0;owned\a"`},
		{"forged line", "t refused A a\rnetns-dns: ok: allow with: domain a",
			`t refused A "a\rnetns-dns:" ok: allow with: domain a`},
		{"C1 CSI", "t refused A a\u009b31m: x", `t refused A "a\u009b31m:" x`},
		{"bidi override", "t refused A moc.\u202eevil: x", `t refused A "moc.\u202eevil:" x`},
		{"invalid UTF-8", "t refused A a\xff: x", `t refused A "a\xff:" x`},
		{"tab", "t refused A a\tb: x", `t refused A "a\tb:" x`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := printable(tt.in); got != tt.want {
				t.Errorf("printable(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestDenialsQuoteEscapes: `netns-setup denials` prints no byte of an
// escape sequence from the log raw, from the rotated log or the current
// one.
func TestDenialsQuoteEscapes(t *testing.T) {
	dir := t.TempDir()
	cfg := netcfg.Config{LogDir: dir, PolicyDir: dir}
	evil := "t refused A \x1b]0;x\x07\x1b[2K\u202e\x9b.test: allow with: domain \x1b]0;x\x07\x1b[2K\u202e\x9b.test\n"
	for _, f := range []string{"a.log.1", "a.log"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(evil), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	if err := denials(context.Background(), cfg, "a", false, multicall.Stdio{Out: &out}); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(out.String(), "\x1b\x07\u202e") || strings.Contains(out.String(), "\x9b") {
		t.Fatalf("denials printed raw escapes: %q", out.String())
	}
	line := `t refused A "\x1b]0;x\a\x1b[2K\u202e\x9b.test:" allow with: domain "\x1b]0;x\a\x1b[2K\u202e\x9b.test"` + "\n"
	if out.String() != line+line {
		t.Fatalf("denials printed %q, want %q twice", out.String(), line)
	}
}
