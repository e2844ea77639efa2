//go:build linux

package seccomp

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// TestTableGolden keeps the printed policy under review: a change to the
// policy shows up as a diff of testdata/table-ARCH.txt.
func TestTableGolden(t *testing.T) {
	for _, goarch := range Arches() {
		t.Run(goarch, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteTableArch(&b, goarch, Options{}); err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, filepath.Join("testdata", "table-"+goarch+".txt"), b.String())
		})
	}
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
		"ioctl": "ioctl 16 arg1 == TIOCSTI ERRNO(EPERM)\nioctl 16 arg1 == TIOCLINUX ERRNO(EPERM)\nioctl 16 arg1 == TIOCSETD ERRNO(EPERM)\n" +
			"ioctl 16 arg1 == TIOCEXCL ERRNO(EPERM)\nioctl 16 arg1 == KDSKBENT ERRNO(EPERM)\nioctl 16 arg1 == KDSKBSENT ERRNO(EPERM)\n" +
			"ioctl 16 arg1 == KDSETKEYCODE ERRNO(EPERM)\nioctl 16 otherwise ALLOW\n",
	} {
		if rows[name] != want {
			t.Errorf("rows for %s:\n%s\nwant:\n%s", name, rows[name], want)
		}
	}
	if err := WriteTable(&b, Options{Allow: []string{"nope"}}); err == nil || err.Error() != `unknown syscall "nope"` {
		t.Errorf("WriteTable(unknown) = %v", err)
	}
}
