//go:build linux

package network

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/miekg/dns"

	"github.com/claude-sandbox/claude-sandbox/internal/netcfg"
	"github.com/claude-sandbox/claude-sandbox/internal/netctl"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// floodMain sends queries for new names to the gateway's port 53 as fast
// as it can, until it is killed: another local user starving the socket
// netns-dns shares with every host user.
func floodMain() int {
	c, err := net.Dial("udp4", gateway+":53")
	if err != nil {
		fmt.Fprintln(os.Stderr, "flood:", err)
		return 1
	}
	q := new(dns.Msg)
	for n := 0; ; n++ {
		q.SetQuestion(fmt.Sprintf("f%d-%d.flood.test.", os.Getpid(), n), dns.TypeA)
		b, _ := q.Pack()
		c.Write(b)
	}
}

// floodWorkersHost is how many processes of another user flood port 53.
const floodWorkersHost = 4

// TestStartUnderAnotherUsersFlood: while another user floods netns-dns's
// port 53 from the host at full speed, 20 of 20 of the launcher's
// readiness checks (the control socket's ready, whose limits are per uid)
// pass. The same check on port 53 alone is measured beside it, to show
// that the flood starves that path.
func TestStartUnderAnotherUsersFlood(t *testing.T) {
	testutil.RequireCommand(t, "setpriv")
	w := newPolicyWorld(t, approveConf, 0)
	a := ownedNamespace(4321)
	w.up(a)
	w.mustResolve(a, "allowed.test")
	cfg := netcfg.Config{PolicyDir: w.policyDir, BridgeAddr: netip.MustParsePrefix(gateway + "/16")}
	check := func(control string) error {
		var err error
		if e := inNetns(w.host, func() error { err = netctl.ResolverAnswers(cfg, a, control); return nil }); e != nil {
			t.Fatal(e)
		}
		return err
	}
	if err := check(w.control); err != nil {
		t.Fatalf("the readiness check without a flood: %v", err)
	}
	id := strconv.Itoa(strangerUid)
	for range floodWorkersHost {
		cmd := exec.Command("nsenter", "--net=/run/netns/"+w.host, "--", "setpriv", "--reuid="+id, "--regid="+id, "--clear-groups", "--", selfBinary(t))
		cmd.Env = []string{roleEnv + "=flood", "PATH=/usr/bin:/bin"}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}
	failed := 0
	for i := range 20 {
		if err := check(w.control); err != nil {
			failed++
			t.Errorf("start %d of 20 under the flood: %v", i+1, err)
		}
	}
	starved := 0
	none := filepath.Join(t.TempDir(), "no-control.sock")
	for range 5 {
		if check(none) != nil {
			starved++
		}
	}
	t.Logf("under the flood: %d of 20 checks on the control socket failed; %d of 5 on port 53 alone", failed, starved)
}
