package netpolicy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParsePolicy(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Config
	}{
		{"policy", "policy allowlist\n", Config{Policy: PolicyAllowlist}},
		{"open", "policy open", Config{Policy: PolicyOpen}},
		{"domain default ports", "domain API.Example.com.", Config{Domains: []Domain{{Name: "api.example.com", Ports: DefaultPorts, Source: "config f:1"}}}},
		{"wildcard and port", "domain *.example.org tcp 8443\ndomain git.example.org tcp 22-23", Config{Domains: []Domain{
			{Name: "example.org", Wildcard: true, Ports: []Ports{{"tcp", 8443, 8443}}, Source: "config f:1"},
			{Name: "git.example.org", Ports: []Ports{{"tcp", 22, 23}}, Source: "config f:2"},
		}}},
		{"udp", "domain stun.example.net udp 3478", Config{Domains: []Domain{{Name: "stun.example.net", Ports: []Ports{{"udp", 3478, 3478}}, Source: "config f:1"}}}},
		{"presets", "preset claude-code\npreset dev", Config{Presets: []string{"claude-code", "dev"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseConfig("f", []byte(tt.in))
			if err != nil {
				t.Fatalf("ParseConfig(%q) error: %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("ParseConfig(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestParsePolicyErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
		ns             bool
	}{
		{"policy word", "policy closed", "f:1: policy: use policy allowlist or policy open", false},
		{"policy twice", "policy open\npolicy allowlist", "f:2: policy: a second policy line: keep one", false},
		{"domain none", "domain", "f:1: domain: want 1 or 3 arguments, got 0: use domain NAME|*.NAME [tcp|udp PORT[-PORT]]", false},
		{"star", "domain *", `f:1: domain: "*": not a domain name: a * may only start the name, as *.example.com (policy open allows every name)`, false},
		{"inner star", "domain a.*.com", `f:1: domain: "a.*.com": not a domain name: a * may only start the name, as *.example.com (policy open allows every name)`, false},
		{"tld", "domain *.com", `f:1: domain: "*.com": a top-level domain alone: name a domain below it`, false},
		{"bad byte", "domain ex/ample.com", `f:1: domain: "ex/ample.com": not a domain name: byte '/'`, false},
		{"empty label", "domain a..com", `f:1: domain: "a..com": not a domain name: empty label or one longer than 63 bytes`, false},
		{"long label", "domain " + strings.Repeat("a", 64) + ".com", `f:1: domain: "` + strings.Repeat("a", 64) + `.com": not a domain name: empty label or one longer than 63 bytes`, false},
		{"domain proto", "domain a.com icmp 1", `f:1: domain: protocol "icmp": use tcp or udp`, false},
		{"domain port", "domain a.com tcp 0", `f:1: domain: port "0": use a number from 1 to 65535 or a range LOW-HIGH`, false},
		{"preset path", "preset ../../etc/passwd", `f:1: preset: "../../etc/passwd": use a name of 1 to 64 letters, digits, - and _`, false},
		{"preset two", "preset a b", "f:1: preset: want 1 name, got 2 arguments", false},
		{"ns resolver", "resolver 1.1.1.1", "f:1: resolver: only in netns-firewall.conf: netns-dns's upstream is shared by every namespace", true},
		{"ns private allow", "allow 192.168.1.0/24", "f:1: allow: 192.168.1.0/24 is in a range the bridge firewall blocks for every namespace: allow it in netns-firewall.conf", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parse := ParseConfig
			if tt.ns {
				parse = ParseNamespaceConfig
			}
			_, err := parse("f", []byte(tt.in))
			if err == nil || err.Error() != tt.want {
				t.Fatalf("parse(%q) error = %v, want %q", tt.in, err, tt.want)
			}
		})
	}
	if _, err := ParseNamespaceConfig("f", []byte("allow 203.0.113.7 tcp 22\npolicy open\n")); err != nil {
		t.Fatalf("ParseNamespaceConfig(public allow) = %v", err)
	}
}

// matches asks the one matcher, Policy.Allows, about d alone.
func matches(d Domain, name string) bool {
	p := Policy{Domains: []PolicyDomain{{Pattern: d.Pattern()}}}
	return len(p.Allows(name)) > 0
}

func TestDomainMatches(t *testing.T) {
	exact := Domain{Name: "example.com"}
	wild := Domain{Name: "example.com", Wildcard: true}
	tests := []struct {
		d    Domain
		name string
		want bool
	}{
		{exact, "example.com.", true},
		{exact, "EXAMPLE.com", true},
		{exact, "www.example.com.", false},
		{exact, "badexample.com.", false},
		{wild, "www.example.com.", true},
		{wild, "a.b.example.com.", true},
		{wild, "example.com.", false},
		{wild, "badexample.com.", false},
	}
	for _, tt := range tests {
		if got := matches(tt.d, tt.name); got != tt.want {
			t.Errorf("%s.Matches(%q) = %v, want %v", tt.d.Pattern(), tt.name, got, tt.want)
		}
	}
}

func TestMerge(t *testing.T) {
	main := Config{Policy: PolicyAllowlist, Presets: []string{"dev"}, Domains: []Domain{{Name: "a.com", Ports: DefaultPorts}}}
	ns := Config{Policy: PolicyOpen, Domains: []Domain{{Name: "b.com", Ports: DefaultPorts}}}
	got := Merge(main, ns)
	if got.Policy != PolicyOpen || len(got.Domains) != 2 || got.Domains[1].Name != "b.com" || len(got.Presets) != 1 {
		t.Fatalf("Merge = %+v", got)
	}
	if got := Merge(main, Config{}); got.Policy != PolicyAllowlist {
		t.Fatalf("Merge without a namespace policy = %q, want the main file's", got.Policy)
	}
}

func TestParsePreset(t *testing.T) {
	got, err := ParsePreset("p", []byte("# registry\nregistry.npmjs.org\n*.github.com tcp 22\n"))
	if err != nil || len(got) != 2 || got[1].Pattern() != "*.github.com" || got[1].Ports[0] != (Ports{"tcp", 22, 22}) {
		t.Fatalf("ParsePreset = %+v, %v", got, err)
	}
	if _, err := ParsePreset("p", []byte("ok.com\n\nbad domain\n")); err == nil || err.Error() != "p:3: domain: want 1 or 3 arguments, got 2: use domain NAME|*.NAME [tcp|udp PORT[-PORT]]" {
		t.Fatalf("ParsePreset(bad) error = %v", err)
	}
}

// TestShippedPresets parses the preset files make install-network ships.
func TestShippedPresets(t *testing.T) {
	for _, name := range []string{"claude-code", "dev"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "install", "presets", name))
		if err != nil {
			t.Fatal(err)
		}
		ds, err := ParsePreset(name, data)
		if err != nil || len(ds) == 0 {
			t.Fatalf("preset %s: %d domains, %v", name, len(ds), err)
		}
	}
}

// FuzzParseNamespaceConfig: a namespace file fails with one FILE:LINE line,
// or its domains match their own names and its allow lines stay out of the
// blocked ranges.
func FuzzParseNamespaceConfig(f *testing.F) {
	f.Add("policy allowlist\ndomain *.example.com tcp 443\npreset dev\n")
	f.Add("domain a.b udp 1-2\nallow 203.0.113.0/24\n")
	f.Add("policy open\nallow 10.0.0.1")
	f.Fuzz(func(t *testing.T, in string) {
		c, err := ParseNamespaceConfig("f", []byte(in))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f:") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q is not one FILE:LINE line", err)
			}
			return
		}
		for _, d := range c.Domains {
			if d.Wildcard == matches(d, d.Name) || (d.Wildcard && !matches(d, "x."+d.Name)) || len(d.Ports) == 0 {
				t.Fatalf("domain %+v", d)
			}
			if strings.ContainsAny(d.Name, " \t\n*#") {
				t.Fatalf("domain name %q", d.Name)
			}
		}
		for _, a := range c.Allow {
			if blockedDest(a.Dest) {
				t.Fatalf("namespace allow %v in a blocked range", a.Dest)
			}
		}
		if c.Policy != "" && c.Policy != PolicyOpen && c.Policy != PolicyAllowlist {
			t.Fatalf("policy %q", c.Policy)
		}
	})
}

// FuzzParsePreset: a preset file fails with one FILE:LINE line or gives
// domains that a config line could have given.
func FuzzParsePreset(f *testing.F) {
	f.Add("# c\napi.example.com\n*.example.org tcp 22\n")
	f.Add("a.b udp 1-65535")
	f.Fuzz(func(t *testing.T, in string) {
		ds, err := ParsePreset("p", []byte(in))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "p:") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q is not one FILE:LINE line", err)
			}
			return
		}
		for _, d := range ds {
			again, err := parseDomain(append([]string{d.Pattern()}, strings.Fields(d.Ports[0].String())...))
			if err != nil || again.Pattern() != d.Pattern() || len(d.Ports) == 0 {
				t.Fatalf("domain %+v does not parse back: %v", d, err)
			}
		}
	})
}
