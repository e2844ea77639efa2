package netpolicy

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/nsname"
	"github.com/claude-sandbox/claude-sandbox/internal/quote"
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
	// NoPolicyLine: the config has no policy line, and the namespace is
	// open as before policies (its resolv.conf may name another resolver
	// than netns-dns). Only a namespace with a policy line depends on
	// netns-dns answering.
	NoPolicyLine bool `json:"no_policy_line,omitempty"`
	// Generation changes with every up, which makes the table anew and
	// so empties its sets: netns-dns forgets what it pinned.
	Generation int64 `json:"generation"`
	// Allow are the destinations of the namespace's allow lines: answers
	// may lead there although they are local or private.
	Allow []netip.Prefix `json:"allow,omitempty"`
	// MaxTTL caps TTLs, in seconds (0: netns-dns's default).
	MaxTTL int64 `json:"max_ttl,omitempty"`
	// UserApprove is the user-approve line (UserApproveNo, Ask or Yes;
	// "" is ask).
	UserApprove string `json:"user_approve,omitempty"`
	// Deny are the patterns of the deny lines: names no approval opens.
	Deny []string `json:"deny,omitempty"`
	// Owners are the uids that may approve names for the namespace: the
	// uid N of a namespace named NAME-N, and the approvers.
	Owners []uint32 `json:"owners,omitempty"`
	// OwnerGroups are the gids whose members may approve too (approvers
	// @GROUP); the kernel names a caller's groups (SO_PEERGROUPS).
	OwnerGroups []uint32 `json:"owner_groups,omitempty"`
	// HoldMS is how long a query is held, in milliseconds (0: netns-dns's
	// default).
	HoldMS int64 `json:"hold_ms,omitempty"`
}

// Approve is the effective user-approve setting.
func (p *Policy) Approve() string {
	if p.UserApprove == "" {
		return UserApproveAsk
	}
	return p.UserApprove
}

// Denied returns the deny pattern that covers name ("" if none).
func (p *Policy) Denied(name string) string {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	for _, d := range p.Deny {
		if covers(d, name) {
			return d
		}
	}
	return ""
}

// Owner reports whether uid, a member of gids, may act on the namespace.
func (p *Policy) Owner(uid uint32, gids ...uint32) bool {
	if uid == 0 || slices.Contains(p.Owners, uid) {
		return true
	}
	for _, g := range gids {
		if slices.Contains(p.OwnerGroups, g) {
			return true
		}
	}
	return false
}

// PolicyDomain is one allowed name pattern and the pin sets of its ports.
type PolicyDomain struct {
	// Pattern is NAME or *.NAME, lower case.
	Pattern string `json:"pattern"`
	// Ports are its ports as a config line writes them ("tcp 443").
	Ports []string `json:"ports"`
	Sets  []string `json:"sets"`
	// Source is where the line is: "config FILE:LINE" or "preset NAME".
	Source string `json:"source,omitempty"`
}

// covers reports whether pattern (NAME or *.NAME) covers name (lower
// case, no trailing dot).
func covers(pattern, name string) bool {
	if rest, ok := strings.CutPrefix(pattern, "*."); ok {
		return strings.HasSuffix(name, "."+rest)
	}
	return name == pattern
}

// Allows returns the domains that allow name (any case, trailing dot or
// not); nil when none does.
func (p *Policy) Allows(name string) []*PolicyDomain {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	var out []*PolicyDomain
	for i := range p.Domains {
		if d := &p.Domains[i]; covers(d.Pattern, name) {
			out = append(out, d)
		}
	}
	return out
}

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

// ForNamespace is what netns-dns is told about namespace name at addr with
// config c: in allowlist mode, table is its nftables table and pinSet names
// the set of the i-th port group (PortGroups).
func ForNamespace(name string, addr netip.Addr, c Config, upstream []netip.AddrPort, table string, pinSet func(int) string) Policy {
	p := Policy{Name: name, Addr: addr, Mode: c.Policy, Upstream: upstream, MaxTTL: int64(c.MaxTTL / time.Second),
		UserApprove: c.UserApprove, HoldMS: c.Hold.Milliseconds()}
	for _, d := range c.Deny {
		p.Deny = append(p.Deny, d.Pattern())
	}
	for _, a := range c.Allow {
		p.Allow = append(p.Allow, a.Dest)
	}
	if c.Policy != PolicyAllowlist {
		return p
	}
	p.Table = table
	groups := PortGroups(c.Domains)
	for _, d := range c.Domains {
		pd := PolicyDomain{Pattern: d.Pattern(), Source: d.Source}
		for _, port := range d.Ports {
			pd.Ports = append(pd.Ports, port.String())
			pd.Sets = append(pd.Sets, pinSet(slices.Index(groups, port)))
		}
		p.Domains = append(p.Domains, pd)
	}
	return p
}

// LookupUser is the uid of an approvers line's user: a number is a uid, a
// name is looked up in the user database.
func LookupUser(u string) (uint32, error) {
	return lookupID(u, "uid", func(name string) (string, error) {
		usr, err := user.Lookup(name)
		if err != nil {
			return "", err
		}
		return usr.Uid, nil
	})
}

// LookupGroup is the gid of an approvers line's @GROUP: a number is a
// gid, a name is looked up in the group database.
func LookupGroup(g string) (uint32, error) {
	return lookupID(g, "gid", func(name string) (string, error) {
		grp, err := user.LookupGroup(name)
		if err != nil {
			return "", err
		}
		return grp.Gid, nil
	})
}

// lookupID is the number s, or the id (a uid or gid, what) lookup gives
// the name s.
func lookupID(s, what string, lookup func(string) (string, error)) (uint32, error) {
	if n, err := strconv.ParseUint(s, 10, 32); err == nil {
		return uint32(n), nil
	}
	id, err := lookup(s)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(id, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not a number", what, id)
	}
	return uint32(n), nil
}

// AdminGroups are the groups of approvers @admins: the administrators'
// group of the common distributions (sudo: Debian, Ubuntu; wheel: Fedora,
// Arch; admin: older Ubuntu), those that exist.
var AdminGroups = []string{"sudo", "wheel", "admin"}

// Owners are who may approve for namespace name: the uid N of a name
// NAME-N (the launcher's per-user namespaces), then the approvers: users
// looked up with lookup (a user name or a uid to a uid), groups (@GROUP)
// with lookupGroup (a group name or a gid to a gid). An approver that is
// no user or group is an error at its line.
func Owners(name string, approvers []Approver, lookup, lookupGroup func(string) (uint32, error)) (uids, gids []uint32, err error) {
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if n, err := strconv.ParseUint(name[i+1:], 10, 32); err == nil && name[i+1] != '0' {
			uids = append(uids, uint32(n))
		}
	}
	for _, a := range approvers {
		group, ok := strings.CutPrefix(a.User, "@")
		switch {
		case ok && group == "admins":
			n := len(gids)
			for _, g := range AdminGroups {
				if gid, err := lookupGroup(g); err == nil {
					gids = append(gids, gid)
				}
			}
			if len(gids) == n {
				return nil, nil, fmt.Errorf("%s: approvers: @admins: none of the groups sudo, wheel, admin exists: name a group or users", a.Line)
			}
		case ok:
			gid, err := lookupGroup(group)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: approvers: no group %s: name an existing group or a gid", a.Line, quote.String(group))
			}
			gids = append(gids, gid)
		default:
			uid, err := lookup(a.User)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: approvers: no user %s: name an existing user or a uid", a.Line, quote.String(a.User))
			}
			uids = append(uids, uid)
		}
	}
	slices.Sort(uids)
	slices.Sort(gids)
	return slices.Compact(uids), slices.Compact(gids), nil
}
