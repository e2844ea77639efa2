//go:build linux

package network

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	netnsdns "github.com/claude-sandbox/claude-sandbox/applets/netns-dns"
	"github.com/claude-sandbox/claude-sandbox/internal/netctl"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// TestHoldBench prints, for make bench-holds, what a refused name costs a
// glibc lookup (getent hosts, timed by hyperfine) from a sandbox whose
// owner may approve names (user-approve ask, netns-dns's default hold):
//   - with no session: the baseline;
//   - with a launcher session that can show no notification (no net
//     watch, no notify-send): nobody can answer, so nothing is held
//     (target: under 50 ms more than the baseline);
//   - with that session and a net watch of the namespace: the lookup's
//     first query is held once; glibc's retry after the REFUSED, and its
//     query of the other address family, are refused at once (target: one
//     hold per lookup; it was four, 16.4 s, before holds waited for
//     someone who can answer).
//
// It measures and prints, and asserts nothing about time.
func TestHoldBench(t *testing.T) {
	// Selected by scripts/bench-holds (CLAUDE_SBX_E2E=bench-dns).
	testutil.E2E(t, testutil.E2EBenchDNS)
	hyperfine := testutil.RequireCommand(t, "hyperfine")
	testutil.RequireCommand(t, "getent")
	testutil.RequireCommand(t, "unshare")
	w := newPolicyWorld(t, approveConf, 0)
	a := ownedNamespace(4321)
	w.up(a)
	w.mustResolve(a, "allowed.test")
	runs := 30

	// getent of a new name each run (the intermediate shell's pid), in
	// the namespace, with its resolv.conf at /etc/resolv.conf as
	// netns-enter binds it. Exit 2 is getent's "not found".
	measure := func(label string, runs int) (median, stddev float64) {
		t.Helper()
		out := filepath.Join(t.TempDir(), label+".json")
		cmd := exec.Command("nsenter", "--net=/run/netns/"+a, "--",
			"unshare", "--mount", "--propagation", "private", "--",
			"sh", "-c", `mount --bind "$1" /etc/resolv.conf && shift && exec "$@"`, "sh",
			filepath.Join(w.etc, a, "resolv.conf"),
			hyperfine, "--style", "none", "--warmup", "1", "--runs", fmt.Sprint(runs),
			"--export-json", out, "-n", label,
			`getent hosts `+label+`$$.refused.test; test $? = 2`)
		if r := testutil.RunCommand(t, cmd); r.Code != 0 {
			t.Fatalf("hyperfine %s: %v", label, r)
		}
		var res struct {
			Results []struct {
				Median float64 `json:"median"`
				Stddev float64 `json:"stddev"`
			} `json:"results"`
		}
		b, err := os.ReadFile(out)
		if err != nil || json.Unmarshal(b, &res) != nil || len(res.Results) != 1 {
			t.Fatalf("hyperfine's %s: %v %s", out, err, b)
		}
		// Every lookup reached netns-dns and was refused there.
		if want := "refused AAAA " + label; !strings.Contains(w.waitDenial(a, want), want) {
			t.Fatalf("no %q in the denials of %s after the %s runs", want, a, label)
		}
		return res.Results[0].Median, res.Results[0].Stddev
	}
	ms := func(s float64) string { return fmt.Sprintf("%.1f ms", s*1000) }

	base, baseSD := measure("nosession", runs)
	fmt.Printf("holds: getent hosts of a refused name, no session: %s ± %s (median of %d)\n", ms(base), ms(baseSD), runs)

	session := w.dialControl()
	defer session.Close()
	if _, err := session.Do(netctl.Request{Op: netctl.OpSession, Namespace: a}); err != nil {
		t.Fatalf("session of %s: %v", a, err)
	}
	s, sSD := measure("session", runs)
	fmt.Printf("holds: the same in a session nobody can answer in: %s ± %s (median of %d); %+.1f ms, ratio %.2f (target < +50 ms)\n",
		ms(s), ms(sSD), runs, (s-base)*1000, s/base)

	events := w.watchEvents(a)
	var held atomic.Int64
	go func() {
		for e := range events {
			if e.Kind == netctl.EventHeld {
				held.Add(1)
			}
		}
	}()
	watchRuns := 5
	h, hSD := measure("watched", watchRuns)
	hold := netnsdns.DefaultHold.Seconds()
	fmt.Printf("holds: the same with a net watch of the namespace: %s ± %s (median of %d); ratio %.0f; %.2f holds of %v a lookup (target 1); %d held for %d lookups\n",
		ms(h), ms(hSD), watchRuns, h/base, (h-base)/hold, netnsdns.DefaultHold, held.Load(), watchRuns+1)
}
