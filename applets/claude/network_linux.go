package claude

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

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
	return netctl.ResolverAnswers(netcfg.Default(buildinfo.Sysconfdir), name, netctl.SocketPath)
}
