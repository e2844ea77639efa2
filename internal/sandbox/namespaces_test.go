package sandbox

import (
	"slices"
	"testing"
)

// TestNamespacesHostname: bwrap sets a hostname only in a UTS namespace
// of the sandbox's own.
func TestNamespacesHostname(t *testing.T) {
	p := Namespaces()
	if p.Hostname != "claude-sandbox" || !slices.Contains(p.Unshare, "uts") {
		t.Errorf("Namespaces() = hostname %q, unshare %q; want claude-sandbox and uts", p.Hostname, p.Unshare)
	}
}
