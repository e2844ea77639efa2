package claude

import "testing"

func TestParseArgsHostNetwork(t *testing.T) {
	o, err := parseArgs([]string{"--sandbox-network=host", "--sandbox-dry-run", "-p", "x"})
	if err != nil || !o.hostNetwork || o.mode != modeDryRun || len(o.args) != 2 {
		t.Fatalf("parseArgs = %+v, %v", o, err)
	}
	if _, err := parseArgs([]string{"--sandbox-network=lan"}); err == nil {
		t.Fatal("parseArgs(--sandbox-network=lan) succeeded")
	}
}
