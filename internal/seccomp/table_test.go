package seccomp

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestTableGolden keeps the printed policy under review: a change to the
// policy shows up as a diff of testdata/table-ARCH.txt.
func TestTableGolden(t *testing.T) {
	for _, goarch := range Arches() {
		t.Run(goarch, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteTableArch(&b, goarch, Options{}); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "table-"+goarch+".txt")
			if *update {
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/seccomp -run TableGolden -update)", err)
			}
			if got := b.String(); got != string(want) {
				t.Errorf("WriteTableArch(%s) differs from %s (run with -update and review the diff):\n%s", goarch, golden, firstDiff(got, string(want)))
			}
		})
	}
}

func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:", i+1) + "\n got: " + gl + "\nwant: " + wl
		}
	}
	return ""
}

func TestTableOptions(t *testing.T) {
	var b bytes.Buffer
	if err := WriteTableArch(&b, "amd64", Options{Allow: []string{"perf_event_open"}, Deny: []string{"ptrace"}}); err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, l := range strings.Split(b.String(), "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			rows[f[0]] += strings.Join(f, " ") + "\n"
		}
	}
	for name, want := range map[string]string{
		"perf_event_open": "perf_event_open 298 - ALLOW *\n",
		"ptrace":          "ptrace 101 - ERRNO(EPERM) *\n",
		"keyctl":          "keyctl 250 - ERRNO(EPERM)\n",
		"ioctl":           "ioctl 16 arg1 == TIOCSTI ERRNO(EPERM)\nioctl 16 arg1 == TIOCLINUX ERRNO(EPERM)\nioctl 16 arg1 == TIOCSETD ERRNO(EPERM)\nioctl 16 otherwise ALLOW\n",
	} {
		if rows[name] != want {
			t.Errorf("rows for %s:\n%s\nwant:\n%s", name, rows[name], want)
		}
	}
	if err := WriteTable(&b, Options{Allow: []string{"nope"}}); err == nil || err.Error() != `unknown syscall "nope"` {
		t.Errorf("WriteTable(unknown) = %v", err)
	}
}
