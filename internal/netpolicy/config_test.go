package netpolicy

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Config
	}{
		{"empty", "", Config{}},
		{"comments", "# nothing\n   \n\t# more\n", Config{}},
		{"address", "allow 192.168.1.10", Config{Allow: []Allow{{Dest: netip.MustParsePrefix("192.168.1.10/32")}}}},
		{"network and port", "allow 10.1.0.0/16 tcp 443 # mirror\n", Config{Allow: []Allow{{Dest: netip.MustParsePrefix("10.1.0.0/16"), Proto: "tcp", PortLo: 443, PortHi: 443}}}},
		{"range", "allow fd00::/8 udp 1000-2000", Config{Allow: []Allow{{Dest: netip.MustParsePrefix("fd00::/8"), Proto: "udp", PortLo: 1000, PortHi: 2000}}}},
		{"resolvers", "resolver 192.168.1.53\nresolver 10.10.0.1\n", Config{Resolvers: []netip.Addr{netip.MustParseAddr("192.168.1.53"), netip.MustParseAddr("10.10.0.1")}}},
		// With a policy, resolvers are netns-dns's upstreams on the host: a
		// loopback stub is one.
		{"loopback upstream", "policy allowlist\nresolver 127.0.0.53\n", Config{Policy: PolicyAllowlist, Resolvers: []netip.Addr{netip.MustParseAddr("127.0.0.53")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseConfig("f", []byte(tt.in))
			if err != nil {
				t.Fatalf("ParseConfig(%q) error: %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }), cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
				t.Fatalf("ParseConfig(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"unknown", "\n\npermit 1.2.3.4", `f:3: unknown directive "permit": use allow, resolver, policy, domain, preset, max-ttl, user-approve, deny, approvers or hold`},
		{"user-approve word", "user-approve maybe", "f:1: user-approve: use user-approve no, ask or yes"},
		{"user-approve twice", "user-approve no\nuser-approve yes", "f:2: user-approve: a second user-approve line: keep one"},
		{"deny ports", "deny a.com tcp 22", "f:1: deny: want 1 name, got 3 arguments: use deny NAME|*.NAME"},
		{"deny tld", "deny *.com", `f:1: deny: "*.com": a top-level domain alone: name a domain below it`},
		{"approvers none", "approvers", "f:1: approvers: use approvers USER|@GROUP... (user names or uids, @group names or gids, @admins)"},
		{"hold unit", "hold 3", "f:1: hold: use hold N followed by ms or s (hold 3s)"},
		{"hold short", "hold 10ms", "f:1: hold: 10ms: use 100ms to 60s"},
		{"hold long", "hold 61s", "f:1: hold: 61s: use 100ms to 60s"},
		{"hold twice", "hold 1s\nhold 2s", "f:2: hold: a second hold line: keep one"},
		{"no dest", "allow", "f:1: allow: want 1 or 3 arguments, got 0: use allow ADDRESS[/LEN] [tcp|udp PORT[-PORT]]"},
		{"two args", "allow 1.2.3.4 tcp", "f:1: allow: want 1 or 3 arguments, got 2: use allow ADDRESS[/LEN] [tcp|udp PORT[-PORT]]"},
		{"hostname", "allow proxy.lan", `f:1: allow: "proxy.lan" is not an address or a network`},
		{"host bits", "allow 10.1.2.3/16", "f:1: allow: 10.1.2.3/16 has host bits set: write 10.1.0.0/16"},
		{"everything", "allow 0.0.0.0/0", "f:1: allow: 0.0.0.0/0 allows every address: the firewall would keep out nothing"},
		{"everything v6", "allow ::/0", "f:1: allow: ::/0 allows every address: the firewall would keep out nothing"},
		{"zone", "allow fe80::1%eth0", `f:1: allow: "fe80::1%eth0" is not an address or a network`},
		{"mapped", "allow ::ffff:10.0.0.1", `f:1: allow: "::ffff:10.0.0.1" is an IPv4-mapped address: write the IPv4 address`},
		{"proto", "allow 1.2.3.4 icmp 1", `f:1: allow: protocol "icmp": use tcp or udp`},
		{"port zero", "allow 1.2.3.4 tcp 0", `f:1: allow: port "0": use a number from 1 to 65535 or a range LOW-HIGH`},
		{"port big", "allow 1.2.3.4 tcp 65536", `f:1: allow: port "65536": use a number from 1 to 65535 or a range LOW-HIGH`},
		{"port word", "allow 1.2.3.4 tcp http", `f:1: allow: port "http": use a number from 1 to 65535 or a range LOW-HIGH`},
		{"port sign", "allow 1.2.3.4 tcp +80", `f:1: allow: port "+80": use a number from 1 to 65535 or a range LOW-HIGH`},
		{"port reversed", "allow 1.2.3.4 tcp 90-80", `f:1: allow: port "90-80": use a number from 1 to 65535 or a range LOW-HIGH`},
		{"port open range", "allow 1.2.3.4 tcp 80-", `f:1: allow: port "80-": use a number from 1 to 65535 or a range LOW-HIGH`},
		{"resolver v6", "resolver fd00::53", "f:1: resolver: fd00::53 is not IPv4: sandboxes have IPv4 only"},
		{"resolver loopback without policy", "allow 1.2.3.4\nresolver 127.0.0.53", "f:2: resolver: without a policy line the sandboxes query the resolver themselves and cannot reach a loopback address: add policy open (or allowlist), so that netns-dns forwards to it"},
		{"resolver unspecified", "policy open\nresolver 0.0.0.0", "f:2: resolver: 0.0.0.0 is not a DNS server's address"},
		{"resolver none", "resolver", "f:1: resolver: want 1 address, got 0 arguments"},
		{"resolver word", "resolver dns", `f:1: resolver: "dns" is not an address`},
		{"four resolvers", "resolver 1.1.1.1\nresolver 1.1.1.2\nresolver 1.1.1.3\nresolver 1.1.1.4\n", "f:4: resolver: more than 3 resolvers (the C library ignores the rest)"},
		{"nul", "allow 1.2.3.4\x00", "f:1: NUL byte in line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig("f", []byte(tt.in))
			if err == nil || err.Error() != tt.want {
				t.Fatalf("ParseConfig(%q) error = %v, want %q", tt.in, err, tt.want)
			}
		})
	}
}

func TestMaxTTL(t *testing.T) {
	for _, tt := range []struct {
		name, line string
		want       time.Duration
		err        string
	}{
		{name: "none", line: "", want: 0},
		{name: "hours", line: "max-ttl 6h", want: 6 * time.Hour},
		{name: "days", line: "max-ttl 2d", want: 48 * time.Hour},
		{name: "seconds", line: "max-ttl 600s", want: 10 * time.Minute},
		{name: "too short", line: "max-ttl 30s", err: "f:1: max-ttl: 30s is shorter than a minute"},
		{name: "too long", line: "max-ttl 8d", err: "f:1: max-ttl: 8d is longer than 7 days: pins would outlive the names"},
		{name: "no unit", line: "max-ttl 600", err: "f:1: max-ttl: use max-ttl N followed by s, m, h or d (max-ttl 1d)"},
		{name: "twice", line: "max-ttl 1d\nmax-ttl 2d", err: "f:2: max-ttl: a second max-ttl line: keep one"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseConfig("f", []byte(tt.line+"\n"))
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("ParseConfig(%q) = %v, want error %q", tt.line, err, tt.err)
				}
				return
			}
			if err != nil || c.MaxTTL != tt.want {
				t.Fatalf("ParseConfig(%q) = %v, %v, want MaxTTL %v", tt.line, c.MaxTTL, err, tt.want)
			}
		})
	}
	if _, err := ParseNamespaceConfig("f", []byte("max-ttl 1d\n")); err == nil || err.Error() != "f:1: max-ttl: only in netns-firewall.conf: netns-dns's caches are shared by every namespace" {
		t.Errorf("max-ttl in a namespace file: %v", err)
	}
}

func TestForNamespaceCarriesAllowAndMaxTTL(t *testing.T) {
	c, err := ParseConfig("f", []byte("policy allowlist\ndomain a.example\nallow 192.168.1.0/24 tcp 443\nmax-ttl 2h\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := ForNamespace("a", netip.MustParseAddr("10.10.0.2"), c, []netip.AddrPort{netip.MustParseAddrPort("127.0.0.53:53")}, "t", func(i int) string { return "pin" })
	q, err := ParsePolicy("p", p.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Allow) != 1 || q.Allow[0] != netip.MustParsePrefix("192.168.1.0/24") || q.MaxTTL != 7200 {
		t.Errorf("policy of a namespace: allow %v, max_ttl %d, want [192.168.1.0/24] and 7200", q.Allow, q.MaxTTL)
	}
}

func TestApprovalLines(t *testing.T) {
	c, err := ParseConfig("f", []byte("policy allowlist\nuser-approve yes\ndeny *.Evil.example.\ndeny paste.example\napprovers alice 1001\nhold 2500ms\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Policy: PolicyAllowlist, UserApprove: UserApproveYes, Hold: 2500 * time.Millisecond,
		Deny:      []Domain{{Name: "evil.example", Wildcard: true, Source: "config f:3"}, {Name: "paste.example", Source: "config f:4"}},
		Approvers: []Approver{{User: "alice", Line: "f:5"}, {User: "1001", Line: "f:5"}}}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Fatalf("ParseConfig mismatch (-want +got):\n%s", diff)
	}
	ns, err := ParseNamespaceConfig("g", []byte("user-approve no\ndeny x.example\napprovers bob\n"))
	if err != nil {
		t.Fatal(err)
	}
	m := Merge(c, ns)
	if m.UserApprove != UserApproveNo || len(m.Deny) != 3 || len(m.Approvers) != 3 || m.Hold != 2500*time.Millisecond {
		t.Errorf("Merge = %+v, want user-approve no, 3 deny lines, 3 approvers, hold 2.5s", m)
	}
	p := ForNamespace("a", netip.MustParseAddr("10.10.0.2"), m, []netip.AddrPort{netip.MustParseAddrPort("127.0.0.53:53")}, "t", func(int) string { return "pin" })
	q, err := ParsePolicy("p", p.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	if q.Approve() != UserApproveNo || q.HoldMS != 2500 || q.Denied("a.b.EVIL.example.") != "*.evil.example" || q.Denied("evil.example") != "" || q.Denied("x.example") != "x.example" {
		t.Errorf("policy: approve %q hold %d deny %v", q.Approve(), q.HoldMS, q.Deny)
	}
	if (&Policy{}).Approve() != UserApproveAsk {
		t.Errorf("no user-approve line: %q, want ask", (&Policy{}).Approve())
	}
}

func TestOwners(t *testing.T) {
	users := map[string]uint32{"alice": 1001, "bob": 1002}
	groups := map[string]uint32{"sudo": 27, "dev": 1500}
	lookup := func(m map[string]uint32) func(string) (uint32, error) {
		return func(n string) (uint32, error) {
			if id, ok := m[n]; ok {
				return id, nil
			}
			return 0, fmt.Errorf("no %q", n)
		}
	}
	for _, tt := range []struct {
		name   string
		ns     string
		ap     []Approver
		groups map[string]uint32
		want   []uint32
		gids   []uint32
		err    string
	}{
		{name: "per-user", ns: "agents-1000", want: []uint32{1000}},
		{name: "shared", ns: "agents", ap: []Approver{{"bob", "f:1"}, {"alice", "f:2"}}, want: []uint32{1001, 1002}},
		{name: "both", ns: "agents-1001", ap: []Approver{{"alice", "f:1"}, {"bob", "f:1"}}, want: []uint32{1001, 1002}},
		{name: "no number", ns: "my-agents", want: nil},
		{name: "unknown", ns: "agents", ap: []Approver{{"mallory", "f:3"}}, err: `f:3: approvers: no user mallory: name an existing user or a uid`},
		{name: "group", ns: "agents", ap: []Approver{{"@dev", "f:1"}, {"alice", "f:1"}}, want: []uint32{1001}, gids: []uint32{1500}},
		{name: "unknown group", ns: "agents", ap: []Approver{{"@nope", "f:4"}}, err: `f:4: approvers: no group nope: name an existing group or a gid`},
		{name: "admins", ns: "agents", ap: []Approver{{"@admins", "f:1"}}, gids: []uint32{27}},
		{name: "admins of none", ns: "agents", ap: []Approver{{"@admins", "f:5"}}, groups: map[string]uint32{}, err: `f:5: approvers: @admins: none of the groups sudo, wheel, admin exists: name a group or users`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := groups
			if tt.groups != nil {
				g = tt.groups
			}
			got, gids, err := Owners(tt.ns, tt.ap, lookup(users), lookup(g))
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("Owners = %v, %v, %v, want error %q", got, gids, err, tt.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) || !slices.Equal(gids, tt.gids) {
				t.Fatalf("Owners(%q, %v) = %v, %v, %v, want %v, %v", tt.ns, tt.ap, got, gids, err, tt.want, tt.gids)
			}
		})
	}
}

// A member of an owner group is an owner; a member of another is not.
func TestOwnerGroups(t *testing.T) {
	p := &Policy{Owners: []uint32{1001}, OwnerGroups: []uint32{27}}
	for _, tt := range []struct {
		uid  uint32
		gids []uint32
		want bool
	}{{1001, nil, true}, {0, nil, true}, {1002, nil, false}, {1002, []uint32{100, 27}, true}, {1002, []uint32{100}, false}} {
		if got := p.Owner(tt.uid, tt.gids...); got != tt.want {
			t.Errorf("Owner(%d, %v) = %v, want %v", tt.uid, tt.gids, got, tt.want)
		}
	}
}
