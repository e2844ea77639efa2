package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/sandbox"
)

// toolchainsResult runs the doctor as alice with PATH over a real tree
// made in a temporary directory, and returns the toolchains line.
func toolchainsResult(t *testing.T, home string, path ...string) Result {
	t.Helper()
	h := healthy(t, false)
	h.tree = osTree{}
	h.env["HOME"] = home
	h.env["PATH"] = strings.Join(path, ":")
	for _, r := range Run(context.Background(), h, testConfig) {
		if r.Check == "toolchains" {
			return r
		}
	}
	t.Fatal("no toolchains line")
	return Result{}
}

func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// TestToolchainsCheck: the line lists what the launcher's toolchain.Make
// shows for PATH and what it leaves out, warns only for a directory left
// out for a reason other than its absence, and never fails.
func TestToolchainsCheck(t *testing.T) {
	home := filepath.Join(t.TempDir(), "u")
	cargo, gobin := filepath.Join(home, ".cargo/bin"), filepath.Join(home, "go/bin")
	mkdirs(t, cargo, filepath.Join(home, ".rustup/toolchains"), gobin, filepath.Join(home, sandbox.HomesName, "p/bin"), filepath.Join(home, ".claude-home/bin"))
	missing := filepath.Join(home, "nope/bin")
	for _, tt := range []struct {
		name   string
		path   []string
		status Status
		want   []string // substrings of the message
		fix    string
	}{
		{"system only", []string{"/usr/bin", "/bin"}, OK,
			[]string{"no toolchain of your PATH needs showing"}, ""},
		{"rustup and go install", []string{cargo, "/usr/bin", gobin, missing}, OK,
			[]string{"shown read-only from your PATH: rustup (" + cargo + " " + filepath.Join(home, ".rustup/toolchains") + ", from " + cargo + ")",
				"go install (" + gobin + ", from " + gobin + ")",
				"left out: " + missing + " does not exist"}, ""},
		{"where the sandbox writes", []string{filepath.Join(home, ".claude-home/bin"), filepath.Join(home, sandbox.HomesName, "p/bin")}, OK,
			[]string{"no toolchain of your PATH needs showing: the sandbox has the system's"}, ""},
		{"the home itself", []string{home, cargo}, Warn,
			[]string{"left out: " + home + " is or holds the home directory"}, toolchainsFix},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := toolchainsResult(t, home, tt.path...)
			if r.Status != tt.status || r.Fix != tt.fix {
				t.Errorf("toolchains = %s %q fix %q, want %s fix %q", r.Status, r.Message, r.Fix, tt.status, tt.fix)
			}
			if tt.name == "where the sandbox writes" && r.Message != tt.want[0] {
				t.Errorf("toolchains message = %q, want %q", r.Message, tt.want[0])
			}
			for _, w := range tt.want {
				if !strings.Contains(r.Message, w) {
					t.Errorf("toolchains message %q lacks %q", r.Message, w)
				}
			}
		})
	}
}

// TestToolchainsCheckQuotes: a PATH directory whose name carries escape
// sequences is printed quoted, never raw, in both the shown and the left
// out lists.
func TestToolchainsCheckQuotes(t *testing.T) {
	home := filepath.Join(t.TempDir(), "u")
	evil := filepath.Join(home, "tools/\x1b]0;owned\x07\x1b[2Kbin")
	gone := filepath.Join(home, "gone\x1b[31m")
	mkdirs(t, evil)
	r := toolchainsResult(t, home, evil, gone)
	if strings.ContainsAny(r.Message, "\x1b\x07") {
		t.Fatalf("toolchains message has raw escapes: %q", r.Message)
	}
	for _, w := range []string{strconv.Quote("~/tools/\x1b]0;owned\x07\x1b[2Kbin"), strconv.Quote(evil), strconv.Quote(gone)} {
		if !strings.Contains(r.Message, w) {
			t.Errorf("toolchains message %q lacks %s", r.Message, w)
		}
	}
}
