package sandboxcfg

import "testing"

func TestNetworkDirective(t *testing.T) {
	for _, ok := range []string{"network host\n", "network namespace\n"} {
		if _, err := Parse([]byte(ok), Options{Name: "c"}); err != nil {
			t.Errorf("Parse(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"network\n", "network lan\n", "network host namespace\n"} {
		_, err := Parse([]byte(bad), Options{Name: "c"})
		if err == nil || err.Error() != "c:1: network: want network host or network namespace" {
			t.Errorf("Parse(%q) error = %v", bad, err)
		}
	}
}
