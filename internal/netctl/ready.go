package netctl

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/miekg/dns"

	"github.com/claude-sandbox/claude-sandbox/internal/netcfg"
	"github.com/claude-sandbox/claude-sandbox/internal/netpolicy"
)

// ResolverAnswers is the launcher's check, before a start in namespace
// name, that netns-dns serves it: nil without a policy for it, else the
// word of netns-dns's control socket at control (whose limits are per
// uid, so that another user cannot starve it), else an answer on the
// gateway's port 53; the paths and addresses are cfg's.
func ResolverAnswers(cfg netcfg.Config, name, control string) error {
	b, err := os.ReadFile(cfg.PolicyPath(name))
	if errors.Is(err, os.ErrNotExist) {
		return nil // no policy: the host's resolver, as the firewall says
	}
	if err != nil {
		return err
	}
	if p, err := netpolicy.ParsePolicy(cfg.PolicyPath(name), b); err != nil {
		return fmt.Errorf("%w: sudo systemctl restart netns@%s", err, name)
	} else if p.NoPolicyLine {
		return nil // open as before policies: its resolv.conf names the resolver
	}
	answered, err := serverReady(control, name, readyWait)
	if answered {
		return err
	}
	q := new(dns.Msg)
	q.SetQuestion(".", dns.TypeNS)
	gw := netip.AddrPortFrom(cfg.Gateway(), 53).String()
	if _, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(q, gw); err != nil {
		return fmt.Errorf("netns-dns does not answer on %s for namespace %s (%w): sudo systemctl restart netns-dns", gw, name, err)
	}
	return nil
}

// readyWait is how long the launcher waits for netns-dns to serve a
// namespace it does not serve yet: guard hands netns-dns the namespace's
// sockets within a quarter of a second of its start, and a launcher
// started at the moment a namespace comes up (or netns-dns restarts) must
// not be refused for that.
const readyWait = 2 * time.Second

// serverReady asks netns-dns on its control socket at control whether it
// serves namespace name fully, again until wait has passed while it says
// no. It reports whether netns-dns answered: a busy socket (another user
// may fill the connections of those who own no namespace), an error that
// is not its word on the namespace, or an older netns-dns without the
// socket say nothing, and the caller asks on port 53.
func serverReady(control, name string, wait time.Duration) (answered bool, err error) {
	deadline := time.Now().Add(wait)
	for {
		c, err := Dial(control)
		if err != nil {
			return false, nil // a netns-dns without a control socket: port 53 must do
		}
		c.Raw().SetDeadline(time.Now().Add(2 * time.Second))
		rep, err := c.Do(Request{Op: OpReady, Namespace: name})
		c.Close()
		if err == nil {
			return true, nil
		}
		if !rep.NotReady {
			return false, nil
		}
		if time.Now().After(deadline) {
			return true, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
