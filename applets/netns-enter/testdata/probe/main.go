// Command probe reports, as JSON, what a command started by netns-enter
// gets: arguments, network namespace, credentials, capability and
// no_new_privs status, inherited file descriptors and environment. With
// -o FILE it writes there instead of to stdout (for runs with stdout closed).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

type report struct {
	Args   []string
	Netns  string
	Uids   [3]int
	Gids   [3]int
	Groups []int
	Status map[string]string
	Fds    map[int]string // descriptors without FD_CLOEXEC: inherited
	Env    []string
}

func main() {
	// Inherited descriptors first, before the runtime or we open any
	// (ours are all close-on-exec, inherited ones cannot be).
	fds := map[int]string{}
	for fd := 0; fd < 1024; fd++ {
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC != 0 {
			continue
		}
		target, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
		fds[fd] = target
	}
	r := report{Args: os.Args[1:], Fds: fds, Env: os.Environ(), Status: map[string]string{}}
	r.Netns, _ = os.Readlink("/proc/self/ns/net")
	r.Uids[0], r.Uids[1], r.Uids[2] = unix.Getresuid()
	r.Gids[0], r.Gids[1], r.Gids[2] = unix.Getresgid()
	r.Groups, _ = unix.Getgroups()
	if r.Groups == nil {
		r.Groups = []int{}
	}
	f, err := os.Open("/proc/self/status")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && (strings.HasPrefix(k, "Cap") || k == "NoNewPrivs") {
			r.Status[k] = strings.TrimSpace(v)
		}
	}
	out := os.Stdout
	if len(os.Args) == 3 && os.Args[1] == "-o" {
		if out, err = os.Create(os.Args[2]); err != nil {
			os.Exit(1)
		}
	}
	if err := json.NewEncoder(out).Encode(r); err != nil {
		os.Exit(1)
	}
}
