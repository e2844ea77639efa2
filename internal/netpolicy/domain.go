package netpolicy

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
)

// Policy modes of a namespace.
const (
	// PolicyOpen: the internet (and the allow lines), as without a policy
	// line, but DNS through netns-dns.
	PolicyOpen = "open"
	// PolicyAllowlist: the addresses of allowed names (pinned by netns-dns
	// as it answers), the allow lines, and nothing else.
	PolicyAllowlist = "allowlist"
)

// Ports is one protocol and port range a domain is allowed on.
type Ports struct {
	Proto  string
	Lo, Hi uint16
}

func (p Ports) String() string {
	if p.Lo == p.Hi {
		return fmt.Sprintf("%s %d", p.Proto, p.Lo)
	}
	return fmt.Sprintf("%s %d-%d", p.Proto, p.Lo, p.Hi)
}

// DefaultPorts are the ports of a domain line without any: HTTP and HTTPS.
var DefaultPorts = []Ports{{"tcp", 80, 80}, {"tcp", 443, 443}}

// Domain is one allowed name: exactly Name, or with Wildcard any name below
// it (not Name itself), on Ports.
type Domain struct {
	Name     string // lower case, no trailing dot
	Wildcard bool
	Ports    []Ports
	// Source says where the line is: "config FILE:LINE" or "preset NAME".
	Source string
}

// Pattern is the name as written in the config: NAME or *.NAME.
func (d Domain) Pattern() string {
	if d.Wildcard {
		return "*." + d.Name
	}
	return d.Name
}

// parseDomain parses the arguments of a domain line, or a line of a preset
// file: NAME or *.NAME, then optionally tcp|udp PORT[-PORT].
func parseDomain(f []string) (Domain, error) {
	const usage = "use domain NAME|*.NAME [tcp|udp PORT[-PORT]]"
	if len(f) != 1 && len(f) != 3 {
		return Domain{}, fmt.Errorf("domain: want 1 or 3 arguments, got %d: %s", len(f), usage)
	}
	d, err := ParsePattern(f[0])
	if err != nil {
		return Domain{}, fmt.Errorf("domain: %w", err)
	}
	if len(f) == 1 {
		d.Ports = append([]Ports(nil), DefaultPorts...)
		return d, nil
	}
	if f[1] != "tcp" && f[1] != "udp" {
		return Domain{}, fmt.Errorf("domain: protocol %q: use tcp or udp", f[1])
	}
	p, err := parsePorts(f[1], f[2])
	if err != nil {
		return Domain{}, fmt.Errorf("domain: port %q: use a number from 1 to 65535 or a range LOW-HIGH", f[2])
	}
	d.Ports = []Ports{p}
	return d, nil
}

// ParsePorts reads a port group as a config line writes it: "tcp 443",
// "udp 3478-3480".
func ParsePorts(s string) (Ports, error) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return Ports{}, fmt.Errorf("ports %q: use tcp|udp PORT[-PORT]", s)
	}
	return parsePorts(f[0], f[1])
}

func parsePorts(proto, ports string) (Ports, error) {
	if proto != "tcp" && proto != "udp" {
		return Ports{}, fmt.Errorf("protocol %q: use tcp or udp", proto)
	}
	p := Ports{Proto: proto}
	lo, hi, isRange := strings.Cut(ports, "-")
	if !isRange {
		hi = lo
	}
	var err error
	if p.Lo, err = parsePort(lo); err == nil {
		p.Hi, err = parsePort(hi)
	}
	if err != nil || p.Lo > p.Hi {
		return Ports{}, fmt.Errorf("port %q: use a number from 1 to 65535 or a range LOW-HIGH", ports)
	}
	return p, nil
}

// ParsePattern reads NAME or *.NAME (any case, a trailing dot or not), as
// domain and deny lines and approvals write names; it has no ports.
func ParsePattern(s string) (Domain, error) {
	var d Domain
	name := strings.ToLower(strings.TrimSuffix(s, "."))
	if rest, ok := strings.CutPrefix(name, "*."); ok {
		d.Wildcard, name = true, rest
	}
	if err := checkDomainName(name); err != nil {
		return Domain{}, fmt.Errorf("%q: %w", s, err)
	}
	d.Name = name
	return d, nil
}

// CheckDomainName reports whether name (any case, no trailing dot) is one
// a domain line could name exactly: the names a user may be told to allow.
func CheckDomainName(name string) error { return checkDomainName(strings.ToLower(name)) }

// checkDomainName accepts host names as DNS carries them: labels of
// letters, digits, hyphens and underscores (SRV-style names), 1 to 63 bytes,
// 253 in all, at least two labels (a top-level domain alone would allow a
// whole registry).
func checkDomainName(name string) error {
	if name == "" || name == "*" || strings.Contains(name, "*") {
		return fmt.Errorf("not a domain name: a * may only start the name, as *.example.com (policy open allows every name)")
	}
	if len(name) > 253 {
		return fmt.Errorf("longer than 253 bytes")
	}
	labels := strings.Split(name, ".")
	if len(labels) < 2 {
		return fmt.Errorf("a top-level domain alone: name a domain below it")
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return fmt.Errorf("not a domain name: empty label or one longer than 63 bytes")
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("not a domain name: byte %q", c)
			}
		}
	}
	return nil
}

// blockedDest reports whether p overlaps the ranges the bridge firewall
// keeps sandboxes from.
func blockedDest(p netip.Prefix) bool {
	list := Blocked4
	if !p.Addr().Is4() {
		list = Blocked6
	}
	for _, b := range list {
		if b.Overlaps(p) {
			return true
		}
	}
	return false
}

// ParsePreset parses a preset file: one domain line's arguments a line
// (NAME or *.NAME, optionally tcp|udp PORT[-PORT]), # comments.
func ParsePreset(file string, data []byte) ([]Domain, error) {
	var out []Domain
	for n, line := range strings.Split(string(data), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if strings.ContainsRune(line, 0) {
			return nil, fmt.Errorf("%s:%d: NUL byte in line", file, n+1)
		}
		d, err := parseDomain(f)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, n+1, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// checkPresetName keeps preset names to plain file names.
func checkPresetName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("preset: %q: use a name of 1 to 64 letters, digits, - and _", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("preset: %q: use a name of 1 to 64 letters, digits, - and _", name)
		}
	}
	return nil
}

// Merge is the effective config of a namespace: the main file, with a
// namespace file's policy (when it has one) instead of the main one's, and
// its domains, presets and allow lines added.
func Merge(main, ns Config) Config {
	out := main
	if ns.Policy != "" {
		out.Policy = ns.Policy
	}
	out.Domains = append(append([]Domain(nil), main.Domains...), ns.Domains...)
	out.Presets = append(append([]string(nil), main.Presets...), ns.Presets...)
	out.Allow = append(append([]Allow(nil), main.Allow...), ns.Allow...)
	if ns.UserApprove != "" {
		out.UserApprove = ns.UserApprove
	}
	if ns.Hold != 0 {
		out.Hold = ns.Hold
	}
	out.Deny = append(append([]Domain(nil), main.Deny...), ns.Deny...)
	out.Approvers = append(append([]Approver(nil), main.Approvers...), ns.Approvers...)
	return out
}

// NamespaceFile is the own file of namespace name beside the main config
// file path: netns-firewall.d/NAME.conf.
func NamespaceFile(path, name string) string {
	return filepath.Join(filepath.Dir(path), "netns-firewall.d", name+".conf")
}

// PortGroups returns the distinct port specs of domains, in order of first
// use: set i (PinSet(i)) holds the addresses of names allowed on the i-th.
func PortGroups(domains []Domain) []Ports {
	var out []Ports
	seen := map[Ports]bool{}
	for _, d := range domains {
		for _, p := range d.Ports {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}
