package netnssetup

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/claude-sandbox/claude-sandbox/internal/netpolicy"
)

// dnsCheckTimeout is how long checkDNS waits for netns-dns's answer.
const dnsCheckTimeout = 2 * time.Second

// checkDNS asks netns-dns on gw, from inside the namespace at path (from
// its address, by which netns-dns tells namespaces apart), a real question.
// In allowlist mode it is the TXT record of an allowed name: netns-dns
// answers that itself (NOERROR, empty) only for a namespace whose policy it
// holds, and whose sockets (package handover) it holds, and neither
// forwards nor logs it. In open mode it is forwarded: any
// answer but REFUSED (what netns-dns says to an address it does not know)
// will do. An allowlist without domain lines refuses every name: then any
// answer shows that netns-dns runs.
func checkDNS(path string, gw netip.Addr, p netpolicy.Policy) error {
	q := new(dns.Msg)
	q.SetQuestion(".", dns.TypeNS)
	want := -1 // any rcode but REFUSED
	if p.Mode == netpolicy.PolicyAllowlist {
		if len(p.Domains) == 0 {
			want = -2 // any rcode
		} else {
			name, wildcard := strings.CutPrefix(p.Domains[0].Pattern, "*.")
			if wildcard {
				name = "netns-setup-status." + name
			}
			q.SetQuestion(dns.Fqdn(name), dns.TypeTXT)
			want = dns.RcodeSuccess
		}
	}
	var resp *dns.Msg
	err := inNetns(path, func() (err error) {
		c := &dns.Client{Timeout: dnsCheckTimeout}
		resp, _, err = c.Exchange(q, netip.AddrPortFrom(gw, 53).String())
		return err
	})
	if err != nil {
		return fmt.Errorf("netns-dns does not answer for %s: %w", p.Name, err)
	}
	if want == -1 && resp.Rcode == dns.RcodeRefused || want >= 0 && resp.Rcode != want {
		return fmt.Errorf("netns-dns does not answer for %s: %s to %s %s (does it read %s's policy, and hold the sockets up hands it?)", p.Name,
			dns.RcodeToString[resp.Rcode], dns.TypeToString[q.Question[0].Qtype], q.Question[0].Name, p.Name)
	}
	return nil
}
