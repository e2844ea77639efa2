package testutil

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/nsname"
)

// UniqueName returns prefix followed by random hex digits, n bytes in all
// (at most 15, the namespace name limit), so parallel test runs of other
// packages never collide.
func UniqueName(prefix string, n int) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	s := prefix + hex.EncodeToString(b)
	return s[:n]
}

// Netns creates a throwaway network namespace with ip netns add (so it is
// /run/netns/NAME), deleted when the test ends, and returns its name. It
// needs root and ip(8).
func Netns(t testing.TB, prefix string) string {
	t.Helper()
	RequireRoot(t)
	RequireCommand(t, "ip")
	name := UniqueName(prefix, 12)
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	return name
}

// InNetns runs a command inside namespace ns (ip netns exec) and returns its
// standard output; a failure fails the test with the output.
func InNetns(t testing.TB, ns string, args ...string) string {
	t.Helper()
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ip netns exec %s %s: %v: %s%s", ns, strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// OpenNetns opens /run/netns/NAME and returns its file, closed when the test
// ends.
func OpenNetns(t testing.TB, ns string) *os.File {
	t.Helper()
	f, err := os.Open(nsname.Path(ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
