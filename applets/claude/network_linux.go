package claude

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/buildinfo"
	"github.com/claude-sandbox/claude-sandbox/internal/netcfg"
	"github.com/claude-sandbox/claude-sandbox/internal/netctl"
	"github.com/claude-sandbox/claude-sandbox/internal/netpolicy"
	"github.com/claude-sandbox/claude-sandbox/internal/nsname"
	"github.com/claude-sandbox/claude-sandbox/internal/sandbox"
)

// networkFacts reads what the launcher needs to pick the namespace: the
// names of netns-enter's whitelist (root-owned, in SYSCONFDIR), whether a
// namespace is mounted, and its policy for the dry run.
func networkFacts(hostNetwork bool) sandbox.NetworkFacts {
	return sandbox.NetworkFacts{
		Whitelist:   whitelistNames(filepath.Join(buildinfo.Sysconfdir, "netns-enter")),
		HostNetwork: hostNetwork,
		Up:          netnsMounted,
		Policy:      describePolicy,
	}
}

// whitelistNames returns the first field of each line; the whitelist's
// full syntax is netns-enter's to check.
func whitelistNames(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		if f := strings.Fields(line); len(f) > 0 && nsname.Valid(f[0]) {
			out = append(out, f[0])
		}
	}
	return out
}

// netnsMounted: /run/netns/NAME is a namespace (nsfs), not the empty file
// of an up that failed or a down that did not finish.
func netnsMounted(name string) bool {
	var st unix.Statfs_t
	return unix.Statfs(nsname.Path(name), &st) == nil && st.Type == unix.NSFS_MAGIC
}

// describePolicy reads the policy netns-setup up wrote for netns-dns.
func describePolicy(name string) string {
	cfg := netcfg.Default(buildinfo.Sysconfdir)
	path := cfg.PolicyPath(name)
	b, err := os.ReadFile(path)
	if err != nil {
		return "policy none (every address of the internet, the host's resolver)"
	}
	p, err := netpolicy.ParsePolicy(path, b)
	if err != nil {
		return "policy unreadable: " + err.Error()
	}
	if p.Mode == "open" {
		return "policy open (every name and address of the internet, DNS through netns-dns)"
	}
	return fmt.Sprintf("policy allowlist (%d domain lines; refused: sudo netns-setup denials %s)", len(p.Domains), name)
}

// checkResolver refuses to start in a namespace with a policy whose
// resolver, netns-dns on the gateway, does not serve it: the sandbox
// would have no names, and the bridge firewall lets its queries reach no
// other server.
//
// It asks netns-dns's control socket whether it serves the namespace
// fully (a netns-dns that lacks the sockets of the table inside the
// namespace would refuse every name of the sandbox: SERVFAIL). Its limits
// are per uid, so another local user cannot keep the answer from coming;
// port 53 on the gateway is shared with every user of the host (its
// socket for unknown sources and its rate limit), and a flood there made
// starts fail. Only where the control socket gives no answer (an older
// netns-dns, or this uid's connections all busy) is a query sent there
// instead (it refuses one: the host is no namespace of its).
func checkResolver(name string) error {
	return resolverAnswers(netcfg.Default(buildinfo.Sysconfdir), name, netctl.SocketPath)
}

// resolverAnswers is checkResolver with the paths and addresses of cfg and
// the control socket at control.
func resolverAnswers(cfg netcfg.Config, name, control string) error {
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
		c, err := netctl.Dial(control)
		if err != nil {
			return false, nil // a netns-dns without a control socket: port 53 must do
		}
		c.Raw().SetDeadline(time.Now().Add(2 * time.Second))
		rep, err := c.Do(netctl.Request{Op: netctl.OpReady, Namespace: name})
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
