package doctor

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"
)

// resolveTimeout bounds the DNS check's lookup.
const resolveTimeout = 5 * time.Second

// Nameserver returns the first nameserver line of a resolv.conf.
func Nameserver(resolvConf []byte) (netip.Addr, bool) {
	for _, l := range strings.Split(string(resolvConf), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == "nameserver" {
			if a, err := netip.ParseAddr(f[1]); err == nil {
				return a, true
			}
		}
	}
	return netip.Addr{}, false
}

// resolve looks name up at the first nameserver of the resolv.conf file,
// and nowhere else, and prints the addresses. The DNS check runs it inside
// the namespace, where that nameserver is what the sandbox gets.
func resolve(ctx context.Context, file, name string, w io.Writer) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	ns, ok := Nameserver(b)
	if !ok {
		return fmt.Errorf("%s has no nameserver line", file)
	}
	server := netip.AddrPortFrom(ns, 53).String()
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, server)
	}}
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	addrs, err := r.LookupHost(ctx, name)
	if err != nil {
		return fmt.Errorf("resolve %s at %s: %w", name, server, err)
	}
	_, err = fmt.Fprintf(w, "%s via %s\n", strings.Join(addrs, " "), server)
	return err
}
