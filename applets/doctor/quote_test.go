package doctor

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// TestAgentHashQuotesRecords: what the agent-hash line prints from the
// state file (the source a download came from, which names a server) and
// from the agent link is quoted when a terminal would act on it.
func TestAgentHashQuotesRecords(t *testing.T) {
	evil := "npm https://r.example/\x1b]0;owned\x07\x1b[2K"
	line := func(h *fakeHost) Result {
		for _, r := range Run(context.Background(), h, testConfig) {
			if r.Check == "agent-hash" {
				return r
			}
		}
		t.Fatal("no agent-hash line")
		return Result{}
	}
	h := healthy(t, false)
	js, err := json.Marshal(evil)
	if err != nil {
		t.Fatal(err)
	}
	h.files[stateFile] = strings.Replace(stateText(agentSum, len(agentText), ""),
		"release https://downloads.claude.ai/claude-code-releases (signed manifest)", string(js[1:len(js)-1]), -1)
	r := line(h)
	if r.Status != OK || strings.ContainsAny(r.Message, "\x1b\x07") || !strings.Contains(r.Message, strconv.Quote(evil)) {
		t.Errorf("agent-hash with an escape in the recorded source = %s %q, want ok with %s", r.Status, r.Message, strconv.Quote(evil))
	}

	h = healthy(t, false)
	h.links["/opt/claude/bin/claude"] = "claude.\x1b[8m2.1.0"
	r = line(h)
	if r.Status != Warn || strings.ContainsAny(r.Message, "\x1b") || !strings.Contains(r.Message, strconv.Quote("claude.\x1b[8m2.1.0")) {
		t.Errorf("agent-hash with an escape in the link's target = %s %q, want warn with it quoted", r.Status, r.Message)
	}
}
