// Command smokeprobe is run by the bindir tests in the smoke test's place:
// it tries what a hostile binary under test would, and prints one line for
// each attempt with the errno it got (or what it reached).
//
// Usage: smokeprobe UNIXSOCKET... TCPADDR
package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "child" {
		time.Sleep(time.Hour) // what outlives the run, if anything does
		return
	}
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: smokeprobe UNIXSOCKET... TCPADDR")
		os.Exit(2)
	}
	socks, addr := os.Args[1:len(os.Args)-1], os.Args[len(os.Args)-1]
	for _, p := range socks {
		fmt.Printf("connect unix %s: %s\n", p, result(connectUnix(p)))
	}
	fmt.Printf("write /var/tmp: %s\n", result(os.WriteFile("/var/tmp/smokeprobe", []byte("x"), 0o644)))
	_, err := os.ReadDir("/sys/class/net")
	fmt.Printf("list /sys/class/net: %s\n", result(err))
	c, err := net.Dial("tcp", addr)
	if err == nil {
		c.Close()
	}
	fmt.Printf("connect tcp %s: %s\n", addr, result(err))
	cmd := exec.Command("/proc/self/exe", "child")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	fmt.Printf("start setsid child: %s\n", result(cmd.Start()))
}

// connectUnix connects to the socket at path with the syscalls themselves,
// so that the errno is the kernel's (or the filter's).
func connectUnix(path string) error {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		return os.NewSyscallError("socket", err)
	}
	defer unix.Close(fd)
	return os.NewSyscallError("connect", unix.Connect(fd, &unix.SockaddrUnix{Name: path}))
}

// result is "ok" or the syscall and errno name of err.
func result(err error) string {
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return err.Error()
	}
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Syscall + " " + unix.ErrnoName(errno)
	}
	return unix.ErrnoName(errno)
}
