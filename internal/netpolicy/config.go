package netpolicy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Config is the firewall's config file (netns-firewall.conf): one
// directive per line, # starts a comment.
//
//	allow DEST [tcp|udp PORT[-PORT]]   DEST: an address or a network, IPv4 or IPv6
//	resolver ADDRESS                   without a policy line: the sandboxes' DNS
//	                                   server; with one: the upstream netns-dns
//	                                   forwards to (IPv4, up to 3 lines)
//	policy allowlist|open              how netns-dns and the namespace's firewall
//	                                   treat names and addresses
//	domain NAME|*.NAME [tcp|udp PORT[-PORT]]
//	                                   an allowed name (default tcp 80 and 443)
//	preset NAME                        the domains of a shipped preset file
//	max-ttl N{s,m,h,d}                 the longest TTL netns-dns honours
//	                                   (default a day)
//	user-approve no|ask|yes            whether the namespace's owners may
//	                                   approve names (default ask: and
//	                                   refused queries are held while they
//	                                   are asked)
//	deny NAME|*.NAME                   a name no approval can open
//	approvers USER|@GROUP...           users and groups who may approve
//	                                   for the namespace
//	hold N{ms,s}                       how long a query is held (ask)
//
// A namespace's own file (netns-firewall.d/NAME.conf) takes the same lines
// but resolver, and allow lines there may not open the ranges the bridge
// firewall blocks (those are shared by every namespace).
type Config struct {
	Allow     []Allow
	Resolvers []netip.Addr
	// Policy is PolicyAllowlist, PolicyOpen, or "" where no line says.
	Policy  string
	Domains []Domain
	Presets []string
	// MaxTTL caps the TTLs netns-dns honours; 0 is its default.
	MaxTTL time.Duration
	// UserApprove is UserApproveNo, UserApproveAsk, UserApproveYes or ""
	// where no line says (ask).
	UserApprove string
	// Deny are the names no approval can open.
	Deny []Domain
	// Approvers are the users of approvers lines, as written.
	Approvers []Approver
	// Hold is how long a query is held; 0 is netns-dns's default.
	Hold time.Duration
}

// Values of user-approve.
const (
	UserApproveNo  = "no"
	UserApproveAsk = "ask"
	UserApproveYes = "yes"
)

// Approver is one user or group of an approvers line.
type Approver struct {
	// User is a user name or a uid, or @GROUP (a group name or gid, or
	// @admins), as written.
	User string
	// Line is FILE:LINE of the approvers line.
	Line string
}

// The bounds of hold: below a tenth of a second no one could answer;
// beyond a minute every client has long given up.
const (
	minHold = 100 * time.Millisecond
	maxHold = time.Minute
)

// The bounds of max-ttl: below a minute every answer would be pinned for
// the pin floor anyway; beyond a week a pin outlives any name's plans.
const (
	minMaxTTL = time.Minute
	maxMaxTTL = 7 * 24 * time.Hour
)

// maxResolvers is the C library's MAXNS.
const maxResolvers = 3

// ParseConfig parses the config file's content; file names it in errors,
// which read FILE:LINE: what is wrong.
func ParseConfig(file string, data []byte) (Config, error) {
	return parseConfig(file, data, false)
}

// ParseNamespaceConfig parses a namespace's own file.
func ParseNamespaceConfig(file string, data []byte) (Config, error) {
	return parseConfig(file, data, true)
}

func parseConfig(file string, data []byte, nsFile bool) (Config, error) {
	var c Config
	loopbackLine := 0 // the first resolver line naming a loopback address
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		if strings.ContainsRune(line, 0) {
			return Config{}, fmt.Errorf("%s:%d: NUL byte in line", file, n)
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		var err error
		switch f[0] {
		case "allow":
			var a Allow
			if a, err = parseAllow(f[1:]); err == nil {
				if nsFile && blockedDest(a.Dest) {
					err = fmt.Errorf("allow: %s is in a range the bridge firewall blocks for every namespace: allow it in netns-firewall.conf", destString(a.Dest))
				}
				c.Allow = append(c.Allow, a)
			}
		case "policy":
			if len(f) != 2 || (f[1] != PolicyAllowlist && f[1] != PolicyOpen) {
				err = fmt.Errorf("policy: use policy allowlist or policy open")
			} else if c.Policy != "" {
				err = fmt.Errorf("policy: a second policy line: keep one")
			}
			c.Policy = f[len(f)-1]
		case "domain":
			var d Domain
			if d, err = parseDomain(f[1:]); err == nil {
				d.Source = fmt.Sprintf("config %s:%d", file, n)
				c.Domains = append(c.Domains, d)
			}
		case "user-approve":
			switch {
			case len(f) != 2 || (f[1] != UserApproveNo && f[1] != UserApproveAsk && f[1] != UserApproveYes):
				err = errors.New("user-approve: use user-approve no, ask or yes")
			case c.UserApprove != "":
				err = errors.New("user-approve: a second user-approve line: keep one")
			default:
				c.UserApprove = f[1]
			}
		case "deny":
			var d Domain
			if len(f) != 2 {
				err = fmt.Errorf("deny: want 1 name, got %d arguments: use deny NAME|*.NAME", len(f)-1)
			} else if d, err = ParsePattern(f[1]); err == nil {
				d.Source = fmt.Sprintf("config %s:%d", file, n)
				c.Deny = append(c.Deny, d)
			} else {
				err = fmt.Errorf("deny: %w", err)
			}
		case "approvers":
			if len(f) < 2 {
				err = errors.New("approvers: use approvers USER|@GROUP... (user names or uids, @group names or gids, @admins)")
			}
			for _, u := range f[1:] {
				c.Approvers = append(c.Approvers, Approver{User: u, Line: fmt.Sprintf("%s:%d", file, n)})
			}
		case "hold":
			if c.Hold != 0 {
				err = errors.New("hold: a second hold line: keep one")
			} else {
				c.Hold, err = parseHold(f[1:])
			}
		case "preset":
			if len(f) != 2 {
				err = fmt.Errorf("preset: want 1 name, got %d arguments", len(f)-1)
			} else if err = checkPresetName(f[1]); err == nil {
				c.Presets = append(c.Presets, f[1])
			}
		case "resolver":
			if nsFile {
				err = fmt.Errorf("resolver: only in netns-firewall.conf: netns-dns's upstream is shared by every namespace")
				break
			}
			var r netip.Addr
			if r, err = parseResolver(f[1:]); err == nil {
				if len(c.Resolvers) == maxResolvers {
					err = fmt.Errorf("resolver: more than %d resolvers (the C library ignores the rest)", maxResolvers)
				}
				c.Resolvers = append(c.Resolvers, r)
				if r.IsLoopback() && loopbackLine == 0 {
					loopbackLine = n
				}
			}
		case "max-ttl":
			switch {
			case nsFile:
				err = fmt.Errorf("max-ttl: only in netns-firewall.conf: netns-dns's caches are shared by every namespace")
			case c.MaxTTL != 0:
				err = fmt.Errorf("max-ttl: a second max-ttl line: keep one")
			default:
				c.MaxTTL, err = parseMaxTTL(f[1:])
			}
		default:
			err = fmt.Errorf("unknown directive %q: use allow, resolver, policy, domain, preset, max-ttl, user-approve, deny, approvers or hold", f[0])
		}
		if err != nil {
			return Config{}, fmt.Errorf("%s:%d: %w", file, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return Config{}, fmt.Errorf("%s: %w", file, err)
	}
	// With a policy line, resolver lines are netns-dns's upstreams, which
	// it queries from the host: a loopback stub (systemd-resolved's) is
	// fine. Without one the sandboxes query them themselves.
	if loopbackLine > 0 && c.Policy == "" {
		return Config{}, fmt.Errorf("%s:%d: resolver: without a policy line the sandboxes query the resolver themselves and cannot reach a loopback address: add policy open (or allowlist), so that netns-dns forwards to it", file, loopbackLine)
	}
	return c, nil
}

// parseMaxTTL reads N followed by s, m, h or d.
func parseMaxTTL(f []string) (time.Duration, error) {
	const usage = "max-ttl: use max-ttl N followed by s, m, h or d (max-ttl 1d)"
	if len(f) != 1 || len(f[0]) < 2 {
		return 0, errors.New(usage)
	}
	unit := map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}[f[0][len(f[0])-1]]
	n, err := strconv.ParseUint(f[0][:len(f[0])-1], 10, 32)
	if unit == 0 || err != nil {
		return 0, errors.New(usage)
	}
	d := time.Duration(n) * unit
	switch {
	case d < minMaxTTL:
		return 0, fmt.Errorf("max-ttl: %s is shorter than a minute", f[0])
	case d > maxMaxTTL:
		return 0, fmt.Errorf("max-ttl: %s is longer than 7 days: pins would outlive the names", f[0])
	}
	return d, nil
}

// parseHold reads a duration such as 3s or 2500ms.
func parseHold(f []string) (time.Duration, error) {
	const usage = "hold: use hold N followed by ms or s (hold 3s)"
	if len(f) != 1 {
		return 0, errors.New(usage)
	}
	num, unit := f[0], time.Second
	if v, ok := strings.CutSuffix(num, "ms"); ok {
		num, unit = v, time.Millisecond
	} else if v, ok := strings.CutSuffix(num, "s"); ok {
		num = v
	} else {
		return 0, errors.New(usage)
	}
	n, err := strconv.ParseUint(num, 10, 32)
	if err != nil {
		return 0, errors.New(usage)
	}
	d := time.Duration(n) * unit
	if d < minHold || d > maxHold {
		return 0, fmt.Errorf("hold: %s: use 100ms to 60s", f[0])
	}
	return d, nil
}

func parseAllow(f []string) (Allow, error) {
	const usage = "use allow ADDRESS[/LEN] [tcp|udp PORT[-PORT]]"
	if len(f) != 1 && len(f) != 3 {
		return Allow{}, fmt.Errorf("allow: want 1 or 3 arguments, got %d: %s", len(f), usage)
	}
	dest, err := parseDest(f[0])
	if err != nil {
		return Allow{}, fmt.Errorf("allow: %w", err)
	}
	a := Allow{Dest: dest}
	if len(f) == 1 {
		return a, nil
	}
	if f[1] != "tcp" && f[1] != "udp" {
		return Allow{}, fmt.Errorf("allow: protocol %q: use tcp or udp", f[1])
	}
	a.Proto = f[1]
	lo, hi, isRange := strings.Cut(f[2], "-")
	if !isRange {
		hi = lo
	}
	if a.PortLo, err = parsePort(lo); err == nil {
		a.PortHi, err = parsePort(hi)
	}
	if err != nil || a.PortLo > a.PortHi {
		return Allow{}, fmt.Errorf("allow: port %q: use a number from 1 to 65535 or a range LOW-HIGH", f[2])
	}
	return a, nil
}

func parseDest(s string) (netip.Prefix, error) {
	var p netip.Prefix
	var err error
	if strings.Contains(s, "%") {
		return netip.Prefix{}, fmt.Errorf("%q is not an address or a network", s)
	}
	if strings.Contains(s, "/") {
		p, err = netip.ParsePrefix(s)
	} else {
		var a netip.Addr
		if a, err = netip.ParseAddr(s); err == nil {
			p = netip.PrefixFrom(a, a.BitLen())
		}
	}
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not an address or a network", s)
	}
	if p.Addr().Is4In6() {
		return netip.Prefix{}, fmt.Errorf("%q is an IPv4-mapped address: write the IPv4 address", s)
	}
	if p.Bits() == 0 {
		return netip.Prefix{}, fmt.Errorf("%s allows every address: the firewall would keep out nothing", s)
	}
	if p.Masked() != p {
		return netip.Prefix{}, fmt.Errorf("%s has host bits set: write %s", s, p.Masked())
	}
	return p, nil
}

func parsePort(s string) (uint16, error) {
	v, err := strconv.ParseUint(s, 10, 16)
	if err != nil || v == 0 || (len(s) > 1 && s[0] == '0') {
		return 0, fmt.Errorf("bad port %q", s)
	}
	return uint16(v), nil
}

func parseResolver(f []string) (netip.Addr, error) {
	if len(f) != 1 {
		return netip.Addr{}, fmt.Errorf("resolver: want 1 address, got %d arguments", len(f))
	}
	a, err := netip.ParseAddr(f[0])
	switch {
	case err != nil || a.Zone() != "":
		return netip.Addr{}, fmt.Errorf("resolver: %q is not an address", f[0])
	case !a.Is4():
		return netip.Addr{}, fmt.Errorf("resolver: %s is not IPv4: sandboxes have IPv4 only", a)
	case a.IsUnspecified() || a.IsMulticast() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return netip.Addr{}, fmt.Errorf("resolver: %s is not a DNS server's address", a)
	}
	return a, nil
}
