//go:build linux

package network

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// TestLocalDropsLogged: what an allowlist sandbox tries against the host
// (its bridge address, its LAN address), the LAN and the cloud metadata
// address is dropped and in its denial log, as every other drop is; the
// bridge's table dropped them without a word.
func TestLocalDropsLogged(t *testing.T) {
	w := newPolicyWorld(t, allowlistConf, 0)
	if err := os.WriteFile(filepath.Join(w.presetDir, "web"), []byte("allowed.test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := testutil.UniqueName("la", 9)
	w.up(a)
	w.mustResolve(a, "allowed.test") // netns-dns knows the namespace
	serveHTTP(t, w.lan, lanAddr+":8080", "lan")
	serveHTTP(t, w.lan, metadata+":80", "metadata")
	for _, target := range []string{gateway + ":22", lanHost + ":22", lanAddr + ":8080", metadata + ":80"} {
		if got := dial(t, a, "tcp4", target); got == "ok" {
			t.Fatalf("%s from an allowlist sandbox: ok, want a drop", target)
		}
	}
	for _, want := range []string{
		"dropped tcp " + gateway + " port 22: ",
		"dropped tcp " + lanHost + " port 22: ",
		"dropped tcp " + lanAddr + " port 8080: ",
		"dropped tcp " + metadata + " port 80: ",
	} {
		if got := w.waitDenial(a, want); !strings.Contains(got, want) {
			t.Errorf("denials of %s lacks %q:\n%s", a, want, got)
		}
	}
}
