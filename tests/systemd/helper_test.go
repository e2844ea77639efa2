//go:build linux

package systemd

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// helper runs the test binary as a helper process: "serve" in the machine
// plays the services, "probe" inside the sandbox tries to reach them,
// "latency" measures how fast the machine answers a user.
func helper(mode string, args []string) {
	switch mode {
	case "serve":
		serve(args)
	case "probe":
		probe(args)
	case "latency":
		latency(args)
	}
	fmt.Fprintf(os.Stderr, "unknown helper %q\n", mode)
	os.Exit(2)
}

// serve listens on every ADDR:PORT of args, prints "listening" and answers
// each connection with "hello NAME\n" (NAME from SERVE_NAME) until stdin
// is closed. An argument dns:ADDR:PORT is a DNS server on UDP that
// resolves dnsName to dnsAddr.
func serve(args []string) {
	name := os.Getenv("SERVE_NAME")
	for _, a := range args {
		if a, ok := strings.CutPrefix(a, "dns:"); ok {
			pc, err := net.ListenPacket("udp", a)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			go serveDNS(pc)
			continue
		}
		l, err := net.Listen("tcp", a)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				fmt.Fprintf(c, "hello %s\n", name)
				c.Close()
			}
		}()
	}
	fmt.Println("listening")
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// probeTimeout bounds a connection attempt that the firewall drops.
const probeTimeout = 3 * time.Second

// probe connects to each ADDR:PORT of args and prints one line per
// address: "ADDR ok LINE" with the server's greeting, or "ADDR CLASS"
// where CLASS is refused, unreachable, timeout or the error.
func probe(args []string) {
	res := make([]string, len(args))
	var wg sync.WaitGroup
	for i, a := range args {
		wg.Go(func() { res[i] = dial(a) })
	}
	wg.Wait()
	for i, a := range args {
		fmt.Printf("%s %s\n", a, res[i])
	}
	os.Exit(0)
}

func dial(addr string) string {
	c, err := net.DialTimeout("tcp", addr, probeTimeout)
	if err != nil {
		return classify(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(probeTimeout))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "read " + classify(err)
	}
	return "ok " + strings.TrimSpace(line)
}

func classify(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "unreachable"
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return "denied"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return strings.ReplaceAll(err.Error(), " ", "_")
}

// The one name the DNS helper knows.
const (
	dnsName = "example.test."
	dnsAddr = "93.184.215.14"
)

// serveDNS answers A queries for dnsName; every other name is NXDOMAIN.
func serveDNS(pc net.PacketConn) {
	buf := make([]byte, 1500)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		var p dnsmessage.Parser
		h, err := p.Start(buf[:n])
		if err != nil {
			continue
		}
		q, err := p.Question()
		if err != nil {
			continue
		}
		h.Response, h.Authoritative, h.RecursionAvailable = true, true, true
		found := strings.EqualFold(q.Name.String(), dnsName)
		if !found {
			h.RCode = dnsmessage.RCodeNameError
		}
		b := dnsmessage.NewBuilder(nil, h)
		b.EnableCompression()
		b.StartQuestions()
		b.Question(q)
		b.StartAnswers()
		if found && q.Type == dnsmessage.TypeA {
			b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60},
				dnsmessage.AResource{A: netip.MustParseAddr(dnsAddr).As4()})
		}
		if out, err := b.Finish(); err == nil {
			pc.WriteTo(out, from)
		}
	}
}

// latency starts /bin/true ROUNDS times (args[0]), a few milliseconds
// apart, and prints the median of the times from fork to reaped, in
// nanoseconds: what a process of the user feels of the machine (the
// scheduler, fork, exec, the task limits). A start that fails prints the
// error and exits 1.
func latency(args []string) {
	rounds, err := strconv.Atoi(args[0])
	if err != nil || rounds < 1 {
		fmt.Fprintf(os.Stderr, "latency: want a count of rounds, got %q\n", args)
		os.Exit(2)
	}
	ds := make([]time.Duration, rounds)
	for i := range ds {
		t0 := time.Now()
		if err := exec.Command("/bin/true").Run(); err != nil {
			fmt.Fprintf(os.Stderr, "latency: round %d: /bin/true: %v\n", i, err)
			os.Exit(1)
		}
		ds[i] = time.Since(t0)
		time.Sleep(5 * time.Millisecond)
	}
	slices.Sort(ds)
	fmt.Println(int64(ds[rounds/2]))
	os.Exit(0)
}
