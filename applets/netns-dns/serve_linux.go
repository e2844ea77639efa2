package netnsdns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/handover"
	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/nft"
)

// maxConnsPerSource is how many TCP connections one address (one
// namespace) may hold open to netns-dns; more are closed as they are
// accepted. A client needs a few at once; each holds a file and a
// goroutine until it times out, and netns-dns serves every namespace.
const maxConnsPerSource = 32

// pollEvery is how often the policy directory is read again when inotify
// says nothing (it does not exist yet, or the watch failed).
const pollEvery = 2 * time.Second

func serve(ctx context.Context, o options, stdio multicall.Stdio) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	logf := func(format string, args ...any) { fmt.Fprintf(stdio.Err, "netns-dns: "+format+"\n", args...) }

	pinner, err := nft.NewPinner(-1)
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	defer pinner.Close()
	if err := os.MkdirAll(o.logDir, 0o750); err != nil {
		return fmt.Errorf("denial log: %w", err)
	}
	denials := &DenialLog{Dir: o.logDir}
	r := &Resolver{Pinner: pinner, Upstream: &UDPExchanger{}, Log: denials, PinFloor: time.Duration(o.pinFloor), Logf: logf}
	r.Local = (&hostAddrs{bridge: o.listen.Addr()}).get
	// The sockets of the tables inside the namespaces, which netns-setup
	// hands over: without one, a namespace's allowed names get SERVFAIL.
	ins := &insides{log: denials, logf: logf, taken: r.ResetFlows}
	r.Inside = ins.pinner
	r.approvals.dir = o.stateDir
	if err := os.MkdirAll(o.stateDir, 0o700); err != nil {
		return fmt.Errorf("approvals: %w", err)
	}
	for _, err := range r.approvals.load() {
		logf("%v", err)
	}
	r.hub.owns = r.owns
	denials.OnDrop = r.dropped
	loader := &policyLoader{dir: o.policyDir, r: r, logf: logf}
	loader.refresh(true)
	r.Refresh = func() { loader.refresh(false) }

	// IP_FREEBIND: the bridge may get its address after we start
	// (systemd-networkd configures it in parallel). SO_MARK: the bridge
	// firewall lets the sandboxes' DNS in only to a socket with this mark.
	lc := net.ListenConfig{Control: func(network, address string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = errors.Join(unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_FREEBIND, 1),
				unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_MARK, nft.DNSMark))
		})
		return errors.Join(err, serr)
	}}
	udp, err := newUDPServer(ctx, o.listen, lc, r, logf)
	if err != nil {
		return fmt.Errorf("listen: %w (does another DNS server, such as systemd-resolved's DNSStubListenerExtra, hold it?)", err)
	}
	defer udp.Close()
	loader.setChanged(func() {
		udp.SetNamespaces(r.Addrs())
		ins.keep(func(name string) bool {
			_, err := os.Stat(filepath.Join(o.policyDir, name+".json"))
			return err == nil
		})
	})
	udp.SetNamespaces(r.Addrs())
	ln, err := lc.Listen(ctx, "tcp4", o.listen.String())
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	servers := []*dns.Server{
		{Listener: newLimitListener(ln, maxConnsPerSource), Handler: r, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second, IdleTimeout: func() time.Duration { return 10 * time.Second }},
	}
	errc := make(chan error, len(servers)+1)
	for _, s := range servers {
		go func() { errc <- s.ActivateAndServe() }()
	}
	go loader.watch(ctx)
	go r.sweepHolds(ctx)
	ctl, err := listenControl(o.control)
	if err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	defer ctl.Close()
	go (&controlServer{r: r, ln: ctl, logf: logf}).serve()
	// Last: netns-setup finds the socket once netns-dns answers.
	if err := os.MkdirAll(filepath.Dir(o.handover), 0o755); err != nil {
		return fmt.Errorf("handover: %w", err)
	}
	hl, err := handover.Listen(o.handover)
	if err != nil {
		return fmt.Errorf("handover: %w", err)
	}
	defer hl.Close()
	go ins.serveHandovers(hl)
	go func() {
		if err := readDrops(ctx, denials); err != nil {
			logf("denial log of the firewall's drops: %v", err)
		}
	}()
	logf("serving on %s (udp and tcp), policies from %s, control on %s", o.listen, o.policyDir, o.control)
	select {
	case <-ctx.Done():
		err = nil
	case err = <-errc:
	}
	for _, s := range servers {
		s.Shutdown()
	}
	return err
}

// policyLoader reads the policy directory into the resolver when it
// changed: on inotify events, and before each answer (a stat of the
// directory when nothing changed).
type policyLoader struct {
	dir  string
	r    *Resolver
	logf func(string, ...any)

	// changed, if set, is called after the policies changed.
	changed func()

	mu    sync.Mutex
	mtime time.Time
	last  map[string]string
}

// refresh reloads if the directory's modification time changed (every
// file netns-setup writes or removes is a rename or an unlink in it), or
// with force whatever it says (the clock of mtimes is coarse: two changes
// a few milliseconds apart may show the same time).
func (l *policyLoader) refresh(force bool) {
	st, err := os.Stat(l.dir)
	l.mu.Lock()
	defer l.mu.Unlock()
	if !force && err == nil && st.ModTime().Equal(l.mtime) && l.last != nil {
		return
	}
	files, rerr := readPolicies(l.dir)
	if rerr != nil {
		return // keep the policies (the next query or event tries again)
	}
	if err == nil {
		l.mtime = st.ModTime()
	}
	same := l.last != nil && len(files) == len(l.last)
	for k, v := range files {
		same = same && l.last[k] == string(v)
	}
	if same {
		return
	}
	l.last = map[string]string{}
	for k, v := range files {
		l.last[k] = string(v)
	}
	for _, err := range l.r.SetPolicies(files) {
		l.logf("%v", err)
	}
	if l.changed != nil {
		l.changed()
	}
}

// setChanged sets the func called after the policies changed.
func (l *policyLoader) setChanged(f func()) {
	l.mu.Lock()
	l.changed = f
	l.mu.Unlock()
}

// watch reloads the policies when the directory changes.
func (l *policyLoader) watch(ctx context.Context) {
	dir := l.dir
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		l.logf("inotify: %v: reading %s every %s", err, dir, pollEvery)
		fd = -1
	}
	watching := false
	buf := make([]byte, 4096)
	for ctx.Err() == nil {
		if fd >= 0 && !watching {
			_, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_MOVED_FROM|unix.IN_DELETE|unix.IN_CLOSE_WRITE|unix.IN_DELETE_SELF)
			watching = err == nil
		}
		l.refresh(true)
		if fd < 0 || !watching {
			sleep(ctx, pollEvery)
			continue
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, _ := unix.Poll(fds, int(pollEvery/time.Millisecond))
		if n > 0 {
			for {
				m, err := unix.Read(fd, buf)
				if m <= 0 || err != nil {
					break
				}
				if containsDeleteSelf(buf[:m]) {
					watching = false
				}
			}
		}
	}
	if fd >= 0 {
		unix.Close(fd)
	}
}

func containsDeleteSelf(b []byte) bool {
	for len(b) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafePointer(&b[0]))
		if ev.Mask&(unix.IN_DELETE_SELF|unix.IN_IGNORED) != 0 {
			return true
		}
		b = b[unix.SizeofInotifyEvent+int(ev.Len):]
	}
	return false
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// hostAddrs are the host's own addresses and the network of the bridge
// (the interface that holds the bridge address), read again when older
// than hostAddrsEvery.
type hostAddrs struct {
	bridge netip.Addr

	mu   sync.Mutex
	read time.Time
	out  []netip.Prefix
}

const hostAddrsEvery = 5 * time.Second

func (h *hostAddrs) get() []netip.Prefix {
	h.mu.Lock()
	defer h.mu.Unlock()
	if time.Since(h.read) < hostAddrsEvery {
		return h.out
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return h.out // the last known
	}
	h.read = time.Now()
	var out []netip.Prefix // a new slice: callers still read the last one
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(n.IP)
		if !ok {
			continue
		}
		ip = ip.Unmap()
		out = append(out, netip.PrefixFrom(ip, ip.BitLen()))
		if ones, _ := n.Mask.Size(); ip == h.bridge {
			out = append(out, netip.PrefixFrom(ip, ones).Masked())
		}
	}
	h.out = out
	return out
}

// holdSweep is how often held queries are looked at for their end.
const holdSweep = 100 * time.Millisecond

// sweepHolds runs SweepHolds every holdSweep until ctx ends.
func (r *Resolver) sweepHolds(ctx context.Context) {
	t := time.NewTicker(holdSweep)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.SweepHolds()
		}
	}
}
