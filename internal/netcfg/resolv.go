package netcfg

import (
	"bufio"
	"bytes"
	"fmt"
	"net/netip"
	"strings"
)

// ResolvHeader starts every resolv.conf netns-setup writes; down removes a
// file only when it starts so.
const ResolvHeader = "# Written by netns-setup"

// maxNameservers is MAXNS of the C library: later lines are ignored.
const maxNameservers = 3

// Resolvers picks the nameservers a sandbox uses. override (the firewall
// config's resolver lines) wins. Otherwise the host's resolv.conf decides:
// an IPv4 loopback nameserver (systemd-resolved's 127.0.0.53, a local
// dnsmasq) is reached inside at the gateway, where a stub listener must
// answer (resolved: the drop-in of make install-network); any other IPv4
// nameserver (a LAN resolver such as 192.168.1.1) is kept, and the firewall
// lets port 53 of exactly that address through. IPv6 nameservers are
// dropped: sandboxes have no IPv6. With none left, the gateway is used.
func Resolvers(hostResolv []byte, override []netip.Addr, gateway netip.Addr) []netip.Addr {
	if len(override) > 0 {
		return dedupe(override)
	}
	var out []netip.Addr
	for _, f := range directives(hostResolv) {
		if f[0] != "nameserver" || len(f) < 2 {
			continue
		}
		a, err := netip.ParseAddr(f[1])
		if err != nil {
			continue
		}
		a = a.Unmap()
		switch {
		case !a.Is4():
			continue
		case a.IsLoopback():
			a = gateway
		}
		out = append(out, a)
	}
	out = dedupe(out)
	if len(out) == 0 {
		return []netip.Addr{gateway}
	}
	return out
}

func dedupe(in []netip.Addr) []netip.Addr {
	var out []netip.Addr
	seen := map[netip.Addr]bool{}
	for _, a := range in {
		if !seen[a] && len(out) < maxNameservers {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

// directives returns the fields of each non-comment line.
func directives(b []byte) [][]string {
	var out [][]string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = line[:i]
		}
		if f := strings.Fields(line); len(f) > 0 {
			out = append(out, f)
		}
	}
	return out
}

// ResolvConf renders the resolv.conf of namespace name: the nameservers,
// then the host's search, domain and options lines.
func ResolvConf(name string, servers []netip.Addr, hostResolv []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s for the network namespace %s; netns-setup down removes it.\n", ResolvHeader, name)
	for _, s := range servers {
		fmt.Fprintf(&b, "nameserver %s\n", s)
	}
	for _, f := range directives(hostResolv) {
		switch f[0] {
		case "search", "domain", "options":
			b.WriteString(strings.Join(f, " ") + "\n")
		}
	}
	return b.Bytes()
}
