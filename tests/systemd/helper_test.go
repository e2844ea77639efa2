package systemd

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// helper runs the test binary as a helper process: "serve" in the machine
// plays the services, "probe" inside the sandbox tries to reach them.
func helper(mode string, args []string) {
	switch mode {
	case "serve":
		serve(args)
	case "probe":
		probe(args)
	}
	fmt.Fprintf(os.Stderr, "unknown helper %q\n", mode)
	os.Exit(2)
}

// serve listens on every ADDR:PORT of args, prints "listening" and answers
// each connection with "hello NAME\n" (NAME from SERVE_NAME) until stdin
// is closed.
func serve(args []string) {
	name := os.Getenv("SERVE_NAME")
	for _, a := range args {
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
