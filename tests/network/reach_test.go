//go:build linux

package network

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// enterer runs the probe inside a sandbox namespace as the unprivileged
// test user, through a setuid netns-enter (as the launcher does).
type enterer struct {
	user      testutil.User
	home      string
	bin       string // setuid netns-enter
	whitelist string
}

func newEnterer(t *testing.T, names ...string) *enterer {
	t.Helper()
	u := testutil.RequireUser(t)
	etc := filepath.Join(testutil.RootDir(t), "etc")
	if err := os.Mkdir(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	e := &enterer{user: u, home: testutil.UserHome(t, u), whitelist: filepath.Join(etc, "netns-enter")}
	if err := os.WriteFile(e.whitelist, []byte(strings.Join(names, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.bin = testutil.SetuidNetnsEnter(t, etc, false)
	return e
}

// probe runs spec inside namespace ns as the test user.
func (e *enterer) probe(t *testing.T, ns string, spec probeSpec) probeResult {
	t.Helper()
	js, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	cmd := e.user.Command(e.home, e.bin, ns, "--", selfBinary(t))
	cmd.Env = append(cmd.Env, roleEnv+"=probe", probeEnv+"="+string(js))
	r := testutil.RunCommand(t, cmd)
	if r.Code != 0 {
		t.Fatalf("probe in %s: %s", ns, r)
	}
	var res probeResult
	if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil {
		t.Fatalf("probe output %q: %v", r.Stdout, err)
	}
	if res.Uid != int(e.user.Uid) {
		t.Fatalf("probe ran as uid %d, want %d", res.Uid, e.user.Uid)
	}
	return res
}

// rootProbe runs spec as root in namespace ns (nsenter): the controls that
// show the services answer when the firewall is not in the way.
func rootProbe(t *testing.T, ns string, spec probeSpec) probeResult {
	t.Helper()
	js, _ := json.Marshal(spec)
	cmd := exec.Command("nsenter", "--net=/run/netns/"+ns, "--", selfBinary(t))
	cmd.Env = append(os.Environ(), roleEnv+"=probe", probeEnv+"="+string(js))
	r := testutil.RunCommand(t, cmd)
	var res probeResult
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &res) != nil {
		t.Fatalf("probe in %s as root: %s", ns, r)
	}
	return res
}

// TestReachability builds the world, brings up two sandboxes and checks
// from inside the first one, as the unprivileged user entering through
// netns-enter, what answers and how the rest fails: the internet and DNS
// answer; the LAN, the metadata address and a non-resolver LAN port are
// rejected (EHOSTUNREACH at once: ICMP admin-prohibited); every address of
// the host itself times out (dropped); the second sandbox is unreachable
// (bridge port isolation: no ARP answer).
func TestReachability(t *testing.T) {
	tests := []struct {
		name       string
		hostResolv string
		firewall   string
		resolver   string // the nameserver the sandbox must be given
		open       []check
		closed     map[string]string // check name -> outcome, in addition to the common ones
		closedBy   []check
	}{
		{
			name:       "resolved stub on the bridge",
			hostResolv: "nameserver 127.0.0.53\noptions edns0 trust-ad\nsearch corp.example\n",
			resolver:   gateway,
			closedBy: []check{
				{Name: "lan dns", Kind: "tcp", Addr: lanAddr + ":53"},
			},
			closed: map[string]string{"lan dns": "unreachable"},
		},
		{
			name:       "LAN resolver and an allowed LAN proxy",
			hostResolv: "nameserver " + lanAddr + "\n",
			firewall:   "# the LAN proxy\nallow " + lanAddr + " tcp 3128\n",
			resolver:   lanAddr,
			open: []check{
				{Name: "lan proxy", Kind: "http", Addr: lanAddr + ":3128"},
			},
			closedBy: []check{
				{Name: "host dns", Kind: "tcp", Addr: gateway + ":53", Timeout: 2 * time.Second},
			},
			closed: map[string]string{"host dns": "timeout"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, tt.hostResolv, tt.firewall)
			testutil.InNetns(t, w.host, "sysctl", "-q", "-w", "net.ipv4.ping_group_range=100 200")
			serveHTTP(t, w.inet, inetAddr+":80", "internet")
			serveDNS(t, w.inet, inetAddr+":53")
			serveDNS(t, w.lan, lanAddr+":53")
			serveHTTP(t, w.lan, lanAddr+":8080", "lan")
			serveHTTP(t, w.lan, lanAddr+":3128", "lan proxy")
			serveHTTP(t, w.lan, metadata+":80", "metadata")
			serveDNS(t, w.host, gateway+":53") // resolved's extra stub listener
			serveHTTP(t, w.host, gateway+":8081", "host bridge")
			serveHTTP(t, w.host, "0.0.0.0:8082", "host any")

			a, b := testutil.UniqueName("sa", 9), testutil.UniqueName("sb", 9)
			w.up(a)
			w.up(b)
			serveHTTP(t, b, "0.0.0.0:8083", "second sandbox")
			bAddr := sandboxAddr(t, b).String()

			// Controls: from the host everything answers.
			ctl := rootProbe(t, w.host, probeSpec{Checks: []check{
				{Name: "lan", Kind: "http", Addr: lanAddr + ":8080"},
				{Name: "metadata", Kind: "http", Addr: metadata + ":80"},
				{Name: "internet", Kind: "http", Addr: inetAddr + ":80"},
				{Name: "second sandbox", Kind: "http", Addr: bAddr + ":8083"},
			}})
			for name, o := range ctl.Outcome {
				if !strings.HasPrefix(o, "ok: ") {
					t.Fatalf("control from the host: %s: %s", name, o)
				}
			}

			resolv := filepath.Join(w.etc, a, "resolv.conf")
			e := newEnterer(t, a)
			checks := []check{
				{Name: "internet", Kind: "http", Addr: inetAddr + ":80"},
				{Name: "example.test", Kind: "dns", Host: "example.test"},
				{Name: "lan", Kind: "tcp", Addr: lanAddr + ":8080"},
				{Name: "metadata", Kind: "tcp", Addr: metadata + ":80"},
				{Name: "host bridge", Kind: "tcp", Addr: gateway + ":8081", Timeout: 2 * time.Second},
				{Name: "host any via bridge", Kind: "tcp", Addr: gateway + ":8082", Timeout: 2 * time.Second},
				{Name: "host any via uplink", Kind: "tcp", Addr: inetHost + ":8082", Timeout: 2 * time.Second},
				{Name: "host any via lan", Kind: "tcp", Addr: lanHost + ":8082", Timeout: 2 * time.Second},
				{Name: "second sandbox", Kind: "tcp", Addr: bAddr + ":8083"},
			}
			checks = append(append(checks, tt.open...), tt.closedBy...)
			res := e.probe(t, a, probeSpec{
				Checks:     checks,
				ResolvConf: resolv,
				Files: []string{"/proc/sys/net/ipv6/conf/eth0/disable_ipv6", "/proc/sys/net/ipv4/ping_group_range",
					resolv},
			})
			want := map[string]string{
				"internet":            "ok: internet from " + inetHost, // masqueraded
				"example.test":        "ok: " + exampleIP,
				"lan":                 "unreachable",
				"metadata":            "unreachable",
				"host bridge":         "timeout",
				"host any via bridge": "timeout",
				"host any via uplink": "timeout",
				"host any via lan":    "timeout",
				"second sandbox":      "unreachable",
			}
			for _, c := range tt.open {
				want[c.Name] = "ok: lan proxy from " + lanHost
			}
			for k, v := range tt.closed {
				want[k] = v
			}
			for name, w := range want {
				if got := res.Outcome[name]; got != w {
					t.Errorf("from the sandbox, %s: got %q, want %q", name, got, w)
				}
			}
			if got := res.Files["/proc/sys/net/ipv6/conf/eth0/disable_ipv6"]; got != "1" {
				t.Errorf("disable_ipv6 on eth0 inside = %q, want 1", got)
			}
			if got := res.Files["/proc/sys/net/ipv4/ping_group_range"]; got != "100\t200" {
				t.Errorf("ping_group_range inside = %q, want the host's 100\\t200", got)
			}
			if got := res.Files[resolv]; !strings.Contains(got+"\n", "\nnameserver "+tt.resolver+"\n") {
				t.Errorf("resolv.conf of the sandbox:\n%s\nwant nameserver %s", got, tt.resolver)
			}
			if t.Failed() {
				t.Logf("ruleset:\n%s", testutil.InNetns(t, w.host, "nft", "list", "ruleset"))
			}
		})
	}
}
