//go:build linux

package network

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/netcfg"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// assertNothingMade checks that a failed up of name left no trace and left
// the host's forwarding as the world had it before (see setForward).
func (w *world) assertNothingMade(name string, tableBefore bool) {
	w.t.Helper()
	w.assertGone(name)
	if got := w.hasTable(); got != tableBefore {
		w.t.Errorf("firewall table present = %v after the failed up, want %v", got, tableBefore)
	}
	if !tableBefore {
		if f := w.readForward(); f != w.forward {
			w.t.Errorf("ip_forward = %s after the failed up, want %s as before", f, w.forward)
		}
	}
}

func TestErrors(t *testing.T) {
	type result struct {
		code   int
		stderr string
	}
	tests := []struct {
		name    string
		prepare func(w *world, ns string) // may change the world
		args    func(ns string) []string
		want    func(w *world, ns string) result
		cleanup func(w *world, ns string) // checks and undoes prepare
	}{
		{
			name: "no arguments",
			args: func(string) []string { return nil },
			want: func(*world, string) result { return result{2, "netns-setup: usage: netns-setup up|down|status NAME\n"} },
		},
		{
			name: "unknown command",
			args: func(ns string) []string { return []string{"start", ns} },
			want: func(*world, string) result {
				return result{2, "netns-setup: unknown command \"start\"; usage: netns-setup up|down|status NAME\n"}
			},
		},
		{
			name: "bad name",
			args: func(string) []string { return []string{"up", "../../etc"} },
			want: func(*world, string) result {
				return result{2, "netns-setup: invalid namespace name \"../../etc\": use 1 to 15 characters of a-z, 0-9, '-' or '_', starting with a letter or digit\n"}
			},
		},
		{
			name:    "bridge missing without systemd",
			prepare: func(w *world, _ string) { ip(w.t, "-n", w.host, "link", "del", "br-netns") },
			want: func(_ *world, ns string) result {
				return result{1, "netns-setup: bridge br-netns does not exist and systemd-networkd is not running: create it with ip link add br-netns type bridge && ip address add 10.10.0.1/16 dev br-netns && ip link set br-netns up\n"}
			},
		},
		{
			name:    "bridge without its address",
			prepare: func(w *world, _ string) { ip(w.t, "-n", w.host, "address", "flush", "dev", "br-netns") },
			want: func(_ *world, ns string) result {
				return result{1, "netns-setup: bridge br-netns has no address 10.10.0.1/16: the sandboxes' gateway must be there (networkctl reload, or ip address add 10.10.0.1/16 dev br-netns)\n"}
			},
		},
		{
			name: "bad firewall config",
			prepare: func(w *world, _ string) {
				os.WriteFile(w.firewallConf, []byte("allow 192.168.1.10 tcp 3128\nallow 10.1.2.3/16\n"), 0o644)
			},
			want: func(w *world, ns string) result {
				return result{1, "netns-setup: " + w.firewallConf + ":2: allow: 10.1.2.3/16 has host bits set: write 10.1.0.0/16\n"}
			},
		},
		{
			name: "firewall config writable by others",
			prepare: func(w *world, _ string) {
				os.WriteFile(w.firewallConf, nil, 0o644)
				os.Chmod(w.firewallConf, 0o666)
			},
			want: func(w *world, ns string) result {
				return result{1, "netns-setup: " + w.firewallConf + ": writable by group or others (mode 0666): chmod go-w " + w.firewallConf + "\n"}
			},
		},
		{
			name: "not our interface",
			prepare: func(w *world, ns string) {
				ip(w.t, "-n", w.host, "link", "add", netcfg.HostVeth(ns), "type", "bridge")
			},
			want: func(w *world, ns string) result {
				return result{1, "netns-setup: interface " + netcfg.HostVeth(ns) + " exists and is not a veth: it is not ours, remove it or use another namespace name\n"}
			},
			cleanup: func(w *world, ns string) {
				if !w.hasLink(netcfg.HostVeth(ns)) {
					w.t.Errorf("up deleted the interface that is not ours")
				}
				ip(w.t, "-n", w.host, "link", "del", netcfg.HostVeth(ns))
			},
		},
		{
			name: "address space exhausted by the host",
			prepare: func(w *world, _ string) {
				ip(w.t, "-n", w.host, "address", "flush", "dev", "br-netns")
				ip(w.t, "-n", w.host, "address", "add", "10.10.0.1/30", "dev", "br-netns")
				ip(w.t, "-n", w.host, "address", "add", "10.10.0.2/30", "dev", "br-netns")
				w.extraArgs = []string{"--testonly-bridge-addr=10.10.0.1/30"}
			},
			want: func(_ *world, ns string) result {
				return result{1, "netns-setup: address space exhausted: every address of 10.10.0.0/30 is in use\n"}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, stubResolv, "")
			ns := testutil.UniqueName("se", 9)
			if tt.prepare != nil {
				tt.prepare(w, ns)
			}
			args := []string{"up", ns}
			if tt.args != nil {
				args = tt.args(ns)
			}
			want := tt.want(w, ns)
			r := w.setup(args...)
			if r.Code != want.code || r.Stderr != want.stderr {
				t.Fatalf("netns-setup %s: exit %d, stderr %q\nwant exit %d, stderr %q", strings.Join(args, " "), r.Code, r.Stderr, want.code, want.stderr)
			}
			if r.Stdout != "" {
				t.Fatalf("stdout %q, want nothing", r.Stdout)
			}
			if strings.Count(r.Stderr, "\n") != 1 {
				t.Fatalf("stderr is not one line: %q", r.Stderr)
			}
			if tt.cleanup != nil {
				tt.cleanup(w, ns)
			}
			w.assertNothingMade(ns, false)
		})
	}
}

// TestNoNftables runs netns-setup as on a kernel without nf_tables (see
// denyNftables): up fails with the one line that says what to load and
// makes nothing; status says the same; down, which has no firewall to
// remove there, succeeds.
func TestNoNftables(t *testing.T) {
	w := newWorld(t, stubResolv, "")
	w.extraEnv = []string{noNftablesEnv + "=1"}
	ns := testutil.UniqueName("sn", 9)
	const want = "netns-setup: firewall: nftables unavailable (the kernel needs nf_tables, nft_masq and nft_reject_inet: modprobe nf_tables): socket: protocol not supported\n"
	if r := w.setup("up", ns); r.Code != 1 || r.Stderr != want || r.Stdout != "" {
		t.Fatalf("up: %s\nwant exit 1, %q", r, want)
	}
	w.assertNothingMade(ns, false)
	if r := w.setup("status", ns); r.Code != 1 || !strings.HasSuffix(r.Stderr, want) || strings.Count(r.Stderr, "\n") != 1 {
		t.Errorf("status: %s\nwant exit 1, %q", r, want)
	}
	if r := w.setup("down", ns); r.Code != 0 || r.Stderr != "" {
		t.Errorf("down: %s\nwant exit 0 and nothing on stderr", r)
	}
}

// TestExhaustedByASandbox: the only address is taken by a first namespace;
// a second one fails and leaves nothing, the first stays up.
func TestExhaustedByASandbox(t *testing.T) {
	w := newWorld(t, stubResolv, "")
	ip(t, "-n", w.host, "address", "flush", "dev", "br-netns")
	ip(t, "-n", w.host, "address", "add", "10.10.0.1/30", "dev", "br-netns")
	w.extraArgs = []string{"--testonly-bridge-addr=10.10.0.1/30"}
	a, b := testutil.UniqueName("sx", 9), testutil.UniqueName("sy", 9)
	w.up(a)
	if got := sandboxAddr(t, a); got != netip.MustParseAddr("10.10.0.2") {
		t.Fatalf("first sandbox got %s, want 10.10.0.2", got)
	}
	r := w.setup("up", b)
	if want := "netns-setup: address space exhausted: every address of 10.10.0.0/30 is in use\n"; r.Code != 1 || r.Stderr != want {
		t.Fatalf("up of a second sandbox: %s\nwant exit 1, %q", r, want)
	}
	w.assertNothingMade(b, true)
	r = w.setup("status", a)
	if r.Code != 0 {
		t.Fatalf("first sandbox after the failed up: %s", r)
	}
}

// TestCollision: a foreign namespace already holds the address derived from
// the name; up picks another.
func TestCollision(t *testing.T) {
	w := newWorld(t, stubResolv, "")
	ns := testutil.UniqueName("sc", 9)
	derived, err := netcfg.Address(ns, netip.MustParsePrefix(gateway+"/16"), nil)
	if err != nil {
		t.Fatal(err)
	}
	foreign := testutil.Netns(t, "nf")
	ip(t, "-n", foreign, "link", "add", "eth0", "type", "veth", "peer", "name", "eth1")
	ip(t, "-n", foreign, "address", "add", derived.String()+"/16", "dev", "eth0")
	w.up(ns)
	got := sandboxAddr(t, ns)
	want, _ := netcfg.Address(ns, netip.MustParsePrefix(gateway+"/16"), func(a netip.Addr) bool { return a == derived })
	if got == derived || got != want {
		t.Fatalf("address = %s, want %s (the derived %s is taken)", got, want, derived)
	}
}

// TestNotRoot runs up as the unprivileged user.
func TestNotRoot(t *testing.T) {
	u := testutil.RequireUser(t)
	home := testutil.UserHome(t, u)
	cmd := u.Command(home, selfBinary(t), "up", "agents")
	cmd.Env = append(cmd.Env, roleEnv+"=netns-setup")
	r := testutil.RunCommand(t, cmd)
	if want := "netns-setup: must be run as root (netns@agents.service runs it)\n"; r.Code != 1 || r.Stderr != want {
		t.Fatalf("up as a user: %s\nwant exit 1, %q", r, want)
	}
	if _, err := os.Lstat(filepath.Join("/run/netns", "agents")); err == nil {
		t.Logf("note: /run/netns/agents exists on this machine (not made by this test)")
	}
}

// TestFailedUpOnForwardingHost: on a host that already forwards (Docker, or
// the product installed), a failed up leaves forwarding on; and a
// successful up then down leaves it as it was.
func TestFailedUpOnForwardingHost(t *testing.T) {
	w := newWorld(t, stubResolv, "")
	w.setForward("1")
	ns := testutil.UniqueName("sf", 9)
	ip(t, "-n", w.host, "link", "add", netcfg.HostVeth(ns), "type", "bridge")
	want := "netns-setup: interface " + netcfg.HostVeth(ns) + " exists and is not a veth: it is not ours, remove it or use another namespace name\n"
	if r := w.setup("up", ns); r.Code != 1 || r.Stderr != want {
		t.Fatalf("up: %s\nwant exit 1, %q", r, want)
	}
	ip(t, "-n", w.host, "link", "del", netcfg.HostVeth(ns))
	w.assertNothingMade(ns, false)
	w.up(ns)
	w.mustSetup("down", ns)
	if f := w.readForward(); f != "1" {
		t.Errorf("ip_forward = %s after up and down, want 1 as before", f)
	}
}
