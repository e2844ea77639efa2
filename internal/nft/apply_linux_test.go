package nft

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

func normalize(s string) string { return strings.Join(strings.Fields(s), " ") }

// TestApplyMatchesNft applies the golden rulesets through netlink in a
// throwaway namespace and checks that the kernel holds what nft itself makes
// of the golden text: nft list prints the same for both, and that is
// String() up to line breaks.
func TestApplyMatchesNft(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireCommand(t, "nft")
	for _, name := range []string{"lan-resolver", "resolved-stub", "netns-dns"} {
		t.Run(name, func(t *testing.T) {
			spec := map[string]Spec{"lan-resolver": goldenSpec(), "resolved-stub": stubSpec(), "netns-dns": policySpec()}[name]
			ours, theirs := testutil.Netns(t, "nftA"), testutil.Netns(t, "nftB")
			f := testutil.OpenNetns(t, ours)
			rs := Build(spec)
			if err := Apply(rs, int(f.Fd())); err != nil {
				t.Fatalf("Apply: %v", err)
			}
			testutil.InNetns(t, theirs, "nft", "-f", filepath.Join("testdata", name+".nft"))
			got := testutil.InNetns(t, ours, "nft", "list", "table", "inet", TableName)
			want := testutil.InNetns(t, theirs, "nft", "list", "table", "inet", TableName)
			if got != want {
				t.Fatalf("kernel ruleset from Apply:\n%s\nfrom nft -f of the golden file:\n%s", got, want)
			}
			if normalize(got) != normalize(rs.String()) {
				t.Fatalf("nft list prints:\n%s\nString() is:\n%s", got, rs.String())
			}
		})
	}
}

func TestApplyReplacesAndDeletes(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireCommand(t, "nft")
	ns := testutil.Netns(t, "nftC")
	fd := int(testutil.OpenNetns(t, ns).Fd())
	if ok, err := Exists(TableName, fd); err != nil || ok {
		t.Fatalf("Exists before Apply = %v, %v", ok, err)
	}
	// A table of someone else's in the same namespace stays untouched.
	testutil.InNetns(t, ns, "nft", "add", "table", "inet", "other")
	if err := Apply(Build(goldenSpec()), fd); err != nil {
		t.Fatal(err)
	}
	if err := Apply(Build(stubSpec()), fd); err != nil {
		t.Fatalf("second Apply: %v", err)
	}
	got := testutil.InNetns(t, ns, "nft", "list", "table", "inet", TableName)
	if normalize(got) != normalize(Build(stubSpec()).String()) {
		t.Fatalf("after replacing, nft list prints:\n%s", got)
	}
	if ok, err := Exists(TableName, fd); err != nil || !ok {
		t.Fatalf("Exists after Apply = %v, %v", ok, err)
	}
	for i := range 2 {
		if err := Delete(TableName, fd); err != nil {
			t.Fatalf("Delete #%d: %v", i+1, err)
		}
	}
	if got := testutil.InNetns(t, ns, "nft", "list", "tables"); normalize(got) != "table inet other" {
		t.Fatalf("after Delete, tables are %q, want only table inet other", got)
	}
}
