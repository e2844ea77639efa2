//go:build linux

package seccomp_test

import (
	"os"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// TestHostname: the sandbox has a hostname of its own (its UTS
// namespace), not the host's, and cannot change it (sethostname is not on
// the filter's allowlist).
func TestHostname(t *testing.T) {
	lb, ok := filteredBox(t).(launcherBox)
	if !ok {
		testutil.Missing(t, "the launcher cannot run a sandbox")
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	if host == "claude-sandbox" {
		t.Fatalf("the host's name is claude-sandbox too: the test cannot tell them apart")
	}
	r := run(t, lb, `hostname; uname -n; cat /proc/sys/kernel/hostname; hostname other 2>&1; hostname`)
	want := "claude-sandbox\nclaude-sandbox\nclaude-sandbox\nhostname: you must be root to change the host name\nclaude-sandbox"
	if got := strings.TrimSpace(r.Stdout); got != want {
		t.Errorf("%s: %s\nwant stdout %q (the host is %q)", lb.Kind(), r, want, host)
	}
}
