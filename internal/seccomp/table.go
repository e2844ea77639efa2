package seccomp

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"text/tabwriter"
)

// WriteTable writes the policy, with opts applied, as a readable table
// (syscall, condition, action) for the running architecture.
func WriteTable(w io.Writer, opts Options) error {
	return WriteTableArch(w, runtime.GOARCH, opts)
}

// WriteTableArch is WriteTable for a GOARCH.
func WriteTableArch(w io.Writer, goarch string, opts Options) error {
	p, err := newPlan(goarch, opts)
	if err != nil {
		return err
	}
	f, err := BuildArch(goarch, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "# seccomp filter for linux/%s: %d syscalls known, %d BPF instructions\n",
		archName(goarch), len(p.entries), f.Len())
	fmt.Fprintf(w, "# arguments are compared on their low 32 bits; * marks a change made by the configuration\n")
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	row := func(name, nr, cond string, a Action, config bool) {
		act := a.String()
		if config {
			act += " *"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, nr, cond, act)
	}
	fmt.Fprintf(tw, "SYSCALL\tNR\tCONDITION\tACTION\n")
	row("(any)", "-", "arch is not "+p.arch.auditName+" ("+p.arch.foreign+")", badArch, false)
	if p.arch.x32 {
		row("(any)", "-", fmt.Sprintf("nr & 0x%x (x32 ABI)", x32Bit), badArch, false)
	}
	row("(unknown)", "-", fmt.Sprintf("nr not in the table (a hole, or > %d)", p.max), unknownDefault, false)
	row("(skipped)", "-1", "a tracer cancelled the syscall", allow, false)
	// By name, so that the table can be grepped and diffed.
	es := append([]entry(nil), p.entries...)
	sortByName(es)
	for _, e := range es {
		nr := fmt.Sprint(e.Nr)
		if e.Rule == nil {
			row(e.Name, nr, "-", e.Action, e.Config)
			continue
		}
		for _, c := range e.Rule.Conds {
			if c.Op == opIn {
				for _, v := range c.Values {
					row(e.Name, nr, fmt.Sprintf("arg%d == %s", c.Arg, v.Name), c.Action, false)
				}
				continue
			}
			row(e.Name, nr, c.String(), c.Action, false)
		}
		row(e.Name, nr, "otherwise", e.Action, false)
	}
	return tw.Flush()
}

func (c cond) String() string {
	var names []string
	for _, v := range c.Values {
		names = append(names, v.Name)
	}
	arg := fmt.Sprintf("arg%d", c.Arg)
	switch c.Op {
	case opIn:
		return arg + " is one of " + strings.Join(names, ", ")
	case opNotIn:
		return arg + " is none of " + strings.Join(names, ", ")
	case opAnyBit:
		return fmt.Sprintf("%s & %s (0x%x)", arg, names[0], c.Values[0].V)
	}
	return "?"
}
