package netcfg

import (
	"net/netip"
	"strings"
	"testing"
)

func TestHostVeth(t *testing.T) {
	tests := []struct {
		name, ns, want string
	}{
		{"short", "agents", "netns-agents"},
		{"nine bytes", "abcdefghi", "netns-abcdefghi"},
		{"ten bytes hashed", "abcdefghij", "netns-abc" + HostVeth("abcdefghij")[9:]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := HostVeth(tt.ns); got != tt.want {
				t.Fatalf("HostVeth(%q) = %q, want %q", tt.ns, got, tt.want)
			}
		})
	}
	long1, long2 := HostVeth("abcdefghij"), HostVeth("abcdefghik")
	if len(long1) != 15 || long1 == long2 || !strings.HasPrefix(long1, "netns-abc") {
		t.Fatalf("HostVeth of long names = %q, %q: want distinct 15-byte netns-abc...", long1, long2)
	}
	if got := HostVeth("abcdefghijklmno"); len(got) != 15 {
		t.Fatalf("HostVeth(15 bytes) = %q, longer than IFNAMSIZ-1", got)
	}
}

func TestSteps(t *testing.T) {
	addr := netip.MustParsePrefix("10.10.7.9/16")
	other := netip.MustParsePrefix("10.10.8.8/16")
	gw := netip.MustParseAddr("10.10.0.1")
	want := Link{HostVeth: "netns-a", Bridge: "br-netns", Addr: addr, Gateway: gw}
	good := func() Observed {
		return Observed{
			Host: &HostLink{Veth: true, Paired: true, Master: "br-netns", Up: true, Isolated: true},
			Peer: &PeerLink{Veth: true, Up: true, Addrs: []netip.Prefix{addr}, Gateway: gw},
			LoUp: true,
		}
	}
	full := "create-veth, set-master, isolate, host-up, lo-up, peer-up, add-addr 10.10.7.9/16, default-route"
	tests := []struct {
		name  string
		want  Link
		have  func() Observed
		steps string
	}{
		{"fresh namespace", want, func() Observed { return Observed{} }, full},
		{"all in place", want, good, ""},
		{"host end without peer", want, func() Observed {
			o := good()
			o.Peer = nil
			o.LoUp = false
			return o
		}, "delete-host, " + full},
		{"host end paired elsewhere", want, func() Observed {
			o := good()
			o.Host.Paired = false
			return o
		}, "delete-host, delete-peer, create-veth, set-master, isolate, host-up, peer-up, add-addr 10.10.7.9/16, default-route"},
		{"peer without host end", want, func() Observed {
			o := good()
			o.Host = nil
			return o
		}, "delete-peer, create-veth, set-master, isolate, host-up, peer-up, add-addr 10.10.7.9/16, default-route"},
		{"veth without address", want, func() Observed {
			o := good()
			o.Peer.Addrs = nil
			o.Peer.Gateway = netip.Addr{}
			return o
		}, "add-addr 10.10.7.9/16, default-route"},
		{"wrong address", want, func() Observed {
			o := good()
			o.Peer.Addrs = []netip.Prefix{other}
			return o
		}, "del-addr 10.10.8.8/16, add-addr 10.10.7.9/16, default-route"},
		{"extra address", want, func() Observed {
			o := good()
			o.Peer.Addrs = []netip.Prefix{other, addr}
			return o
		}, "del-addr 10.10.8.8/16, del-addr 10.10.7.9/16, add-addr 10.10.7.9/16, default-route"},
		{"no route", want, func() Observed {
			o := good()
			o.Peer.Gateway = netip.Addr{}
			return o
		}, "default-route"},
		{"not enslaved", want, func() Observed {
			o := good()
			o.Host.Master = ""
			return o
		}, "set-master, isolate"},
		{"not isolated", want, func() Observed {
			o := good()
			o.Host.Isolated = false
			return o
		}, "isolate"},
		{"links down", want, func() Observed {
			o := good()
			o.Host.Up, o.Peer.Up, o.LoUp = false, false, false
			return o
		}, "host-up, lo-up, peer-up"},
		{"no bridge", Link{HostVeth: "netns-a", Addr: addr, Gateway: gw}, func() Observed {
			return Observed{}
		}, "create-veth, host-up, lo-up, peer-up, add-addr 10.10.7.9/16, default-route"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			steps, err := Steps(tt.want, tt.have())
			if err != nil {
				t.Fatal(err)
			}
			if got := FormatSteps(steps); got != tt.steps {
				t.Fatalf("Steps() = %q\nwant %q", got, tt.steps)
			}
		})
	}
}

func TestStepsNotOurs(t *testing.T) {
	_, err := Steps(Link{HostVeth: "netns-a"}, Observed{Host: &HostLink{Veth: false}})
	want := "interface netns-a exists and is not a veth: it is not ours, remove it or use another namespace name"
	if err == nil || err.Error() != want {
		t.Fatalf("Steps(non-veth) error = %v, want %q", err, want)
	}
}

func TestKeep(t *testing.T) {
	cur := []netip.Prefix{netip.MustParsePrefix("10.10.0.1/16"), netip.MustParsePrefix("10.10.3.3/24"), netip.MustParsePrefix("10.10.4.4/16")}
	if a, ok := Keep(cur, defaultBridge, nil); !ok || a != netip.MustParseAddr("10.10.4.4") {
		t.Fatalf("Keep = %v %v, want 10.10.4.4", a, ok)
	}
	if _, ok := Keep(cur, defaultBridge, func(netip.Addr) bool { return true }); ok {
		t.Fatalf("Keep kept an address in use elsewhere")
	}
}
