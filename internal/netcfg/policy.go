package netcfg

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/nsname"
)

// Policy is what netns-setup up tells netns-dns about a namespace, as one
// JSON file per namespace in PolicyDir: who asks (Addr), how to answer
// (Mode), where to forward (Upstream), and which pin sets of which table
// the answers' addresses go to.
type Policy struct {
	Name string     `json:"name"`
	Addr netip.Addr `json:"addr"`
	// Mode is "allowlist" or "open".
	Mode string `json:"mode"`
	// IPv6 says whether the namespace has IPv6 (else AAAA gets no answer).
	IPv6     bool             `json:"ipv6"`
	Upstream []netip.AddrPort `json:"upstream"`
	// Table is the namespace's nftables table (allowlist mode).
	Table   string         `json:"table,omitempty"`
	Domains []PolicyDomain `json:"domains,omitempty"`
	// Generation changes with every up, which makes the table anew and
	// so empties its sets: netns-dns forgets what it pinned.
	Generation int64 `json:"generation"`
}

// PolicyDomain is one allowed name pattern and the pin sets of its ports.
type PolicyDomain struct {
	// Pattern is NAME or *.NAME, lower case.
	Pattern string `json:"pattern"`
	// Ports are its ports as a config line writes them ("tcp 443").
	Ports []string `json:"ports"`
	Sets  []string `json:"sets"`
}

// Allows returns the domains that allow name (any case, trailing dot or
// not); nil when none does.
func (p *Policy) Allows(name string) []*PolicyDomain {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	var out []*PolicyDomain
	for i := range p.Domains {
		d := &p.Domains[i]
		if rest, ok := strings.CutPrefix(d.Pattern, "*."); ok {
			if strings.HasSuffix(name, "."+rest) {
				out = append(out, d)
			}
		} else if name == d.Pattern {
			out = append(out, d)
		}
	}
	return out
}

// PolicyPath is the policy file of namespace name.
func (c Config) PolicyPath(name string) string { return filepath.Join(c.PolicyDir, name+".json") }

// DenialLog is the denial log of namespace name, which netns-dns writes.
func (c Config) DenialLog(name string) string { return filepath.Join(c.LogDir, name+".log") }

// Marshal encodes p.
func (p Policy) Marshal() []byte {
	b, err := json.MarshalIndent(p, "", "\t")
	if err != nil {
		panic(err) // every field encodes
	}
	return append(b, '\n')
}

// ParsePolicy decodes a policy file; file names it in errors.
func ParsePolicy(file string, b []byte) (Policy, error) {
	var p Policy
	if err := json.Unmarshal(b, &p); err != nil {
		return Policy{}, fmt.Errorf("%s: %w", file, err)
	}
	if !nsname.Valid(p.Name) || !p.Addr.Is4() || (p.Mode != "allowlist" && p.Mode != "open") || len(p.Upstream) == 0 {
		return Policy{}, fmt.Errorf("%s: not a policy netns-setup wrote: run netns-setup up %s again", file, p.Name)
	}
	return p, nil
}

// Upstreams are the servers netns-dns forwards to: the config's resolver
// lines, else the host resolv.conf's nameservers (loopback ones included:
// netns-dns runs on the host), port 53; with none, the gateway's stub.
func Upstreams(hostResolv []byte, override []netip.Addr) []netip.AddrPort {
	var out []netip.AddrPort
	add := func(a netip.Addr) {
		ap := netip.AddrPortFrom(a.Unmap(), 53)
		for _, o := range out {
			if o == ap {
				return
			}
		}
		if len(out) < maxNameservers {
			out = append(out, ap)
		}
	}
	for _, a := range override {
		add(a)
	}
	if len(out) > 0 {
		return out
	}
	for _, f := range directives(hostResolv) {
		if f[0] != "nameserver" || len(f) < 2 {
			continue
		}
		if a, err := netip.ParseAddr(f[1]); err == nil && a.Zone() == "" {
			add(a)
		}
	}
	if len(out) == 0 {
		add(netip.AddrFrom4([4]byte{127, 0, 0, 53}))
	}
	return out
}
