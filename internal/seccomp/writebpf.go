//go:build ignore

// writebpf writes the compiled filter (struct sock_filter records, as bwrap
// --seccomp reads them) to stdout, or with -table the policy table; the
// launcher's `claude --sandbox-seccomp[=bpf]` does the same with the user's
// configuration applied.
//
//	go run ./internal/seccomp/writebpf.go [-arch amd64|arm64] [-table] [-allow a,b] [-deny c]
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/seccomp"
)

func main() {
	arch := flag.String("arch", runtime.GOARCH, "GOARCH to build for")
	table := flag.Bool("table", false, "print the policy table instead")
	allow := flag.String("allow", "", "comma-separated syscalls to allow")
	deny := flag.String("deny", "", "comma-separated syscalls to deny")
	flag.Parse()
	var opts seccomp.Options
	if *allow != "" {
		opts.Allow = strings.Split(*allow, ",")
	}
	if *deny != "" {
		opts.Deny = strings.Split(*deny, ",")
	}
	if *table {
		if err := seccomp.WriteTableArch(os.Stdout, *arch, opts); err != nil {
			fmt.Fprintln(os.Stderr, "writebpf:", err)
			os.Exit(1)
		}
		return
	}
	f, err := seccomp.BuildArch(*arch, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "writebpf:", err)
		os.Exit(1)
	}
	os.Stdout.Write(f.Bytes())
}
