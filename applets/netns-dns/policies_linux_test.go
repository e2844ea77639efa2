package netnsdns

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/miekg/dns"
)

// TestReloadErrorKeepsPolicies: a policy directory that cannot be read
// (netns-dns out of files, as a flooding sandbox makes it) leaves the
// known namespaces answered, instead of refusing every sandbox.
func TestReloadErrorKeepsPolicies(t *testing.T) {
	r, _, _, _ := newTestResolver(t)
	dir := filepath.Join(t.TempDir(), "policy")
	os.Mkdir(dir, 0o755)
	r.mu.RLock()
	raw := r.nss[openSrc].raw
	r.mu.RUnlock()
	if err := os.WriteFile(filepath.Join(dir, "open.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	l := &policyLoader{dir: dir, r: r, logf: t.Logf}
	l.refresh(true)
	// The directory's listing fails (ENOTDIR stands for EMFILE here).
	os.RemoveAll(dir)
	os.WriteFile(dir, nil, 0o644)
	l.refresh(true)
	if resp := r.Answer(context.Background(), openSrc, query("evil.test.", dns.TypeA)); resp.Rcode != dns.RcodeSuccess {
		t.Fatalf("after a failed reload: %s, want NOERROR (policy kept)", dns.RcodeToString[resp.Rcode])
	}
	// A directory that is gone for good: no namespaces.
	os.Remove(dir)
	l.refresh(true)
	if resp := r.Answer(context.Background(), openSrc, query("evil.test.", dns.TypeA)); resp.Rcode != dns.RcodeRefused {
		t.Fatalf("after the directory went: %s, want REFUSED", dns.RcodeToString[resp.Rcode])
	}
}
