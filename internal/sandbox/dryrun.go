package sandbox

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
)

// WriteDryRun writes the chain as a shell command, one argument per line,
// shell-quoted, with bwrap's options (read from fd ArgsFD when it runs) in
// place, preceded by comments on what was decided and skipped.
// seccompLen is the filter's instruction count.
func (l *Launch) WriteDryRun(w io.Writer, bwrapPath string, seccompLen int) error {
	b := bufio.NewWriter(w)
	fmt.Fprintln(b, "# claude --sandbox-dry-run: nothing was started")
	for _, n := range l.Notes {
		fmt.Fprintf(b, "# %s\n", n)
	}
	for _, n := range l.Notices {
		fmt.Fprintf(b, "# %s\n", n)
	}
	if len(l.Skipped) > 0 {
		fmt.Fprintf(b, "# skipped, not on this host: %s\n", strings.Join(quoteAll(l.Skipped), " "))
	}
	if len(l.EnvRemoved) > 0 {
		fmt.Fprintf(b, "# environment, removed: %s\n", strings.Join(l.EnvRemoved, " "))
	}
	if len(l.EnvSet) > 0 {
		fmt.Fprintf(b, "# environment, set: %s\n", strings.Join(quoteAll(l.EnvSet), " "))
	}
	fmt.Fprintf(b, "# seccomp: %d instructions on fd %d (claude --sandbox-seccomp shows the policy)\n", seccompLen, SeccompFD)
	fmt.Fprintf(b, "# bwrap reads the options between %s and -- from fd %d (--args); they are shown in place\n", quote(bwrapPath), ArgsFD)
	fmt.Fprintf(b, "# binds are shown by path; the launcher opens each source without trusting names and binds it from the fd (--bind-fd, --ro-bind-fd from fd %d on)\n", SeccompFD+1)
	if c := l.Cgroup; c != nil {
		ws := "no limits"
		for i, w := range c.Writes {
			if i == 0 {
				ws = ""
			}
			ws += " " + quote(w.File+"="+w.Value)
		}
		fmt.Fprintf(b, "# cgroup: the chain starts in %s/claude-sandbox-PID, made with%s\n", quote(c.Parent), ws)
	}
	for _, o := range l.Plan.Ops {
		if o.Kind == bwrap.ROData {
			fmt.Fprintf(b, "# generated %s, read-only (--ro-bind-data from an fd):\n", quote(o.Dest))
			for _, line := range strings.Split(strings.TrimSuffix(string(o.Data), "\n"), "\n") {
				if line == "" {
					fmt.Fprintln(b, "#")
					continue
				}
				fmt.Fprintf(b, "#   %s\n", strings.ToValidUTF8(line, "?"))
			}
		}
	}
	var argv []string
	argv = append(argv, l.SystemdRun...)
	argv = append(argv, l.NetnsEnter...)
	argv = append(argv, bwrapPath)
	argv = append(argv, l.Plan.Args()...)
	argv = append(argv, "--")
	argv = append(argv, l.Command...)
	for i, a := range argv {
		indent := "  "
		if i == 0 {
			indent = ""
		}
		end := " \\\n"
		if i == len(argv)-1 {
			end = "\n"
		}
		fmt.Fprintf(b, "%s%s%s", indent, quote(a), end)
	}
	return b.Flush()
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = quote(s)
	}
	return out
}

// quote quotes s for a POSIX shell.
func quote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("@%+=:,./-_", c)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
