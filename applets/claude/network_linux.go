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
// resolver, netns-dns on the gateway, does not answer a query from the
// host (it refuses one: the host is no namespace of its): the sandbox
// would have no names, and the bridge firewall lets its queries reach no
// other server.
//
// Where netns-dns has its control socket, it asks there too whether
// netns-dns serves the namespace fully: a netns-dns that lacks the
// sockets of the table inside the namespace answers the host but refuses
// every name of the sandbox (SERVFAIL).
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
	q := new(dns.Msg)
	q.SetQuestion(".", dns.TypeNS)
	gw := netip.AddrPortFrom(cfg.Gateway(), 53).String()
	if _, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(q, gw); err != nil {
		return fmt.Errorf("netns-dns does not answer on %s for namespace %s (%w): sudo systemctl restart netns-dns", gw, name, err)
	}
	return serverReady(control, name, readyWait)
}

// readyWait is how long the launcher waits for netns-dns to serve a
// namespace it does not serve yet: guard hands netns-dns the namespace's
// sockets within a quarter of a second of its start, and a launcher
// started at the moment a namespace comes up (or netns-dns restarts) must
// not be refused for that.
const readyWait = 2 * time.Second

// serverReady asks netns-dns on its control socket at control whether it
// serves namespace name fully, again until wait has passed while it says
// no. Only netns-dns's word that it does not refuses the start: a busy
// socket (another user may fill the connections of those who own no
// namespace) or an older netns-dns says nothing.
func serverReady(control, name string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		c, err := netctl.Dial(control)
		if err != nil {
			return nil // a netns-dns without a control socket: the answer must do
		}
		c.Raw().SetDeadline(time.Now().Add(2 * time.Second))
		rep, err := c.Do(netctl.Request{Op: netctl.OpReady, Namespace: name})
		c.Close()
		if err == nil || !rep.NotReady {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
