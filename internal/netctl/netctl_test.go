package netctl

import (
	"encoding/json"
	"testing"
	"time"
)

// TestAllowanceJSON checks that scope and until appear for an approval
// only, as claude-sandbox-net(1) says of net list --json.
func TestAllowanceJSON(t *testing.T) {
	for _, tc := range []struct {
		a    Allowance
		want string
	}{
		{Allowance{Pattern: "example.com", Ports: []string{"tcp 443"}, Source: "config /etc/x.conf:3"},
			`{"pattern":"example.com","ports":["tcp 443"],"source":"config /etc/x.conf:3"}`},
		{Allowance{Pattern: "example.com", Ports: []string{"tcp 443"}, Source: "approval", Scope: ScopeAlways, By: 1000},
			`{"pattern":"example.com","ports":["tcp 443"],"source":"approval","scope":"always","by":1000}`},
		{Allowance{Pattern: "example.com", Ports: []string{"tcp 443"}, Source: "approval", Scope: ScopeOnce, By: 1000, Until: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
			`{"pattern":"example.com","ports":["tcp 443"],"source":"approval","scope":"once","by":1000,"until":"2026-01-02T03:04:05Z"}`},
	} {
		b, err := json.Marshal(tc.a)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("json of %+v:\n got %s\nwant %s", tc.a, b, tc.want)
		}
	}
}
