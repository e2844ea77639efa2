package seccomp

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Action is a seccomp return value (SECCOMP_RET_*).
type Action uint32

const (
	allow       Action = 0x7fff0000 // SECCOMP_RET_ALLOW
	killProcess Action = 0x80000000 // SECCOMP_RET_KILL_PROCESS
	retErrno    Action = 0x00050000 // SECCOMP_RET_ERRNO
)

// errno returns SECCOMP_RET_ERRNO with an errno value.
func errno(e uint16) Action { return retErrno | Action(e) }

var errnoNames = map[uint16]string{1: "EPERM", 38: "ENOSYS", 97: "EAFNOSUPPORT"}

func (a Action) String() string {
	switch {
	case a == allow:
		return "ALLOW"
	case a == killProcess:
		return "KILL_PROCESS"
	case a&0xffff0000 == retErrno:
		if n, ok := errnoNames[uint16(a)]; ok {
			return "ERRNO(" + n + ")"
		}
		return fmt.Sprintf("ERRNO(%d)", uint16(a))
	}
	return fmt.Sprintf("0x%08x", uint32(a))
}

// op is how a cond compares the low 32 bits of an argument.
type op int

const (
	opIn     op = iota // equal to one of the values
	opNotIn            // equal to none of the values
	opAnyBit           // any bit of the (single) value set
)

// value is a constant with the name the table prints.
type value struct {
	Name string
	V    uint32
}

// cond is one argument test; the first that matches decides.
type cond struct {
	Arg    int
	Op     op
	Values []value
	Action Action
}

// rule gives one or more syscalls an action, or conds and a fallback action.
type rule struct {
	Why    string
	Names  []string
	Action Action
	Conds  []cond
}

// archInfo describes an architecture the filter supports.
type archInfo struct {
	audit     uint32 // AUDIT_ARCH_*
	auditName string
	foreign   string // the other ABIs the kernel runs, for the table
	table     sysTable
	x32       bool // numbers with bit 30 set are another ABI (x32)
}

var arches = map[string]*archInfo{
	"amd64": {audit: 0xc000003e, auditName: "AUDIT_ARCH_X86_64", foreign: "i386 int $0x80", table: sysnumAMD64, x32: true},
	"arm64": {audit: 0xc00000b7, auditName: "AUDIT_ARCH_AARCH64", foreign: "AArch32", table: sysnumARM64},
}

const x32Bit = 0x40000000

// syscallNr is a syscall's name and number.
type syscallNr struct {
	name string
	nr   uint32
}

// sysTable is an architecture's syscalls, sorted by name (zsysnum.go).
type sysTable []syscallNr

// index returns the position of name in t, or -1.
func (t sysTable) index(name string) int {
	i, ok := slices.BinarySearchFunc(t, name, func(e syscallNr, name string) int { return strings.Compare(e.name, name) })
	if !ok {
		return -1
	}
	return i
}

// entry is the decision for one syscall number.
type entry struct {
	Name   string
	Nr     uint32
	Action Action // when Rule is nil or no cond matches
	Rule   *rule  // the rule with conds, nil for an unconditional action
	Why    string
	Config bool // set by Options
}

// plan is the policy resolved for one architecture and the user's options:
// what compile turns into BPF and WriteTable prints.
type plan struct {
	goarch  string
	arch    *archInfo
	entries []entry // every known syscall, by number
	max     uint32  // highest known number
}

func newPlan(goarch string, opts Options) (*plan, error) {
	a, ok := arches[goarch]
	if !ok {
		return nil, unsupportedArch(goarch)
	}
	if err := checkOptions(opts); err != nil {
		return nil, err
	}
	// entries[i] is the syscall a.table[i] until the sort at the end.
	entries := make([]entry, len(a.table))
	for i, sc := range a.table {
		entries[i] = entry{Name: sc.name, Nr: sc.nr, Action: knownDefault, Why: "not in the allowlist"}
	}
	for i := range rules {
		r := &rules[i]
		for _, nm := range r.Names {
			j := a.table.index(nm)
			if j < 0 {
				continue // another architecture's syscall
			}
			e := &entries[j]
			e.Action, e.Why = r.Action, r.Why
			if len(r.Conds) > 0 {
				e.Rule = r
			}
		}
	}
	if opts.NoLocalSockets {
		if j := a.table.index("socket"); j >= 0 {
			e := &entries[j]
			e.Action, e.Rule, e.Why, e.Config = noLocalSockets.Action, &noLocalSockets, noLocalSockets.Why, true
		}
	}
	set := func(names []string, act Action, why string) {
		for _, nm := range names {
			if j := a.table.index(nm); j >= 0 {
				e := &entries[j]
				e.Action, e.Rule, e.Why, e.Config = act, nil, why, true
			}
		}
	}
	set(opts.Allow, allow, "allowed by configuration")
	set(opts.Deny, eperm, "denied by configuration")

	// By number: the numbers are small and distinct (TestTablesSortedByName),
	// so place them rather than sort.
	p := &plan{goarch: goarch, arch: a}
	for _, e := range entries {
		p.max = max(p.max, e.Nr)
	}
	at := make([]int16, p.max+1)
	for i, e := range entries {
		at[e.Nr] = int16(i + 1)
	}
	p.entries = make([]entry, 0, len(entries))
	for _, i := range at {
		if i > 0 {
			p.entries = append(p.entries, entries[i-1])
		}
	}
	return p, nil
}

// leaf is what a range of numbers leads to: an action, or a rule's block.
type leaf struct {
	action Action
	rule   *rule
}

// span is a range of syscall numbers [lo, hi] with one leaf.
type span struct {
	lo, hi uint32
	leaf   leaf
}

// spans covers the whole 32-bit number space in ascending order, merging
// neighbours with the same leaf.
func (p *plan) spans() []span {
	var out []span
	add := func(lo, hi uint32, l leaf) {
		if n := len(out); n > 0 && out[n-1].leaf == l && out[n-1].hi+1 == lo {
			out[n-1].hi = hi
			return
		}
		out = append(out, span{lo, hi, l})
	}
	next := uint32(0)
	for _, e := range p.entries {
		if e.Nr > next {
			add(next, e.Nr-1, leaf{action: unknownDefault})
		}
		add(e.Nr, e.Nr, leaf{action: e.Action, rule: e.Rule})
		next = e.Nr + 1
	}
	// Above the table: a newer kernel's syscalls. On x86_64 the x32 ABI
	// starts at bit 30. -1 is what a tracer sets to skip a syscall; the
	// kernel runs nothing for it, and answering ENOSYS would overwrite the
	// return value the tracer chose.
	if p.arch.x32 {
		add(next, x32Bit-1, leaf{action: unknownDefault})
		add(x32Bit, 0xfffffffe, leaf{action: badArch})
	} else {
		add(next, 0xfffffffe, leaf{action: unknownDefault})
	}
	add(0xffffffff, 0xffffffff, leaf{action: allow})
	return out
}

func sortByName(es []entry) {
	sort.Slice(es, func(i, j int) bool { return es[i].Name < es[j].Name })
}
