//go:build linux

package network

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

const probeEnv = "NETNS_TEST_PROBE"

// check is one thing the probe tries from inside a sandbox.
type check struct {
	Name    string
	Kind    string // http (GET http://Addr/), tcp (connect), dns (A of Host via the nameserver of ResolvConf)
	Addr    string
	Host    string
	Timeout time.Duration
}

type probeSpec struct {
	Checks     []check
	ResolvConf string
	Files      []string // read and reported, e.g. /proc/sys/... of the namespace
}

type probeResult struct {
	Uid     int
	Outcome map[string]string
	Files   map[string]string
}

// probeMain runs the checks of $NETNS_TEST_PROBE concurrently and prints
// the outcomes as JSON.
func probeMain() int {
	var spec probeSpec
	if err := json.Unmarshal([]byte(os.Getenv(probeEnv)), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		return 2
	}
	res := probeResult{Uid: os.Getuid(), Outcome: map[string]string{}, Files: map[string]string{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range spec.Checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := runCheck(c, spec.ResolvConf)
			mu.Lock()
			res.Outcome[c.Name] = o
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, f := range spec.Files {
		b, err := os.ReadFile(f)
		if err != nil {
			res.Files[f] = "error: " + err.Error()
		} else {
			res.Files[f] = strings.TrimSpace(string(b))
		}
	}
	json.NewEncoder(os.Stdout).Encode(res)
	return 0
}

func runCheck(c check, resolvConf string) string {
	if c.Timeout == 0 {
		c.Timeout = 10 * time.Second
	}
	d := &net.Dialer{Timeout: c.Timeout}
	switch c.Kind {
	case "tcp":
		conn, err := d.Dial("tcp4", c.Addr)
		if err != nil {
			return classify(err)
		}
		conn.Close()
		return "ok"
	case "http":
		client := &http.Client{Timeout: c.Timeout, Transport: &http.Transport{DialContext: d.DialContext, Proxy: nil}}
		resp, err := client.Get("http://" + c.Addr + "/")
		if err != nil {
			return classify(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return "ok: " + string(b)
	case "dns":
		server, err := firstNameserver(resolvConf)
		if err != nil {
			return "error: " + err.Error()
		}
		r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "udp4", net.JoinHostPort(server, "53"))
		}}
		ctx, cancel := context.WithTimeout(context.Background(), c.Timeout)
		defer cancel()
		addrs, err := r.LookupHost(ctx, c.Host)
		if err != nil {
			return classify(err)
		}
		return "ok: " + strings.Join(addrs, ",")
	case "forge-udp", "forge-tcp":
		return forge(c)
	}
	return "error: unknown kind " + c.Kind
}

// forge sends to Addr (UDP) or connects to it (TCP) from the address Host,
// which is not the sandbox's own, as an unprivileged program can try:
// IP_FREEBIND lets it bind any address. It returns "sent", "connected" or
// the errno.
func forge(c check) string {
	typ := syscall.SOCK_DGRAM
	if c.Kind == "forge-tcp" {
		typ = syscall.SOCK_STREAM
	}
	fd, err := syscall.Socket(syscall.AF_INET, typ, 0)
	if err != nil {
		return "socket: " + err.Error()
	}
	defer syscall.Close(fd)
	if err := syscall.SetsockoptInt(fd, syscall.SOL_IP, syscall.IP_FREEBIND, 1); err != nil {
		return "freebind: " + err.Error()
	}
	sa := func(hostport string) *syscall.SockaddrInet4 {
		ap := netip.MustParseAddrPort(hostport)
		return &syscall.SockaddrInet4{Addr: ap.Addr().As4(), Port: int(ap.Port())}
	}
	if err := syscall.Bind(fd, sa(c.Host+":0")); err != nil {
		return "bind: " + err.Error()
	}
	if typ == syscall.SOCK_DGRAM {
		if err := syscall.Sendto(fd, []byte("forged"), 0, sa(c.Addr)); err != nil {
			return err.Error()
		}
		return "sent"
	}
	if err := syscall.Connect(fd, sa(c.Addr)); err != nil {
		return err.Error()
	}
	return "connected"
}

func firstNameserver(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "nameserver" {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("no nameserver in %s", path)
}

// classify names a failure: refused (ECONNREFUSED, a TCP reset),
// unreachable (EHOSTUNREACH: an ICMP reject, or no ARP answer), timeout (no
// answer: dropped), or the error itself.
func classify(err error) string {
	var ne net.Error
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.EHOSTUNREACH):
		return "unreachable"
	case errors.Is(err, syscall.ENETUNREACH):
		return "netunreach"
	case errors.As(err, &dnsErr) && dnsErr.IsTimeout, errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return "error: " + err.Error()
}
