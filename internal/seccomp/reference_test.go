//go:build linux

package seccomp

// The plan evaluated directly, without BPF: the reference the compiled
// program is tested against.

// lookup returns the number of the syscall name.
func (t sysTable) lookup(name string) (uint32, bool) {
	if i := t.index(name); i >= 0 {
		return t[i].nr, true
	}
	return 0, false
}

// decide evaluates the plan directly, without BPF: the reference the
// compiled program is tested against.
func (p *plan) decide(audit, nr uint32, args [6]uint64) Action {
	if audit != p.arch.audit {
		return badArch
	}
	for _, s := range p.spans() {
		if nr < s.lo || nr > s.hi {
			continue
		}
		if s.leaf.rule == nil {
			return s.leaf.action
		}
		for _, c := range s.leaf.rule.Conds {
			if c.matches(uint32(args[c.Arg])) {
				return c.Action
			}
		}
		return s.leaf.action
	}
	panic("spans do not cover the number space")
}

func (c cond) matches(v uint32) bool {
	switch c.Op {
	case opIn, opNotIn:
		in := false
		for _, x := range c.Values {
			in = in || v == x.V
		}
		return in == (c.Op == opIn)
	case opAnyBit:
		return v&c.Values[0].V != 0
	}
	panic("unknown op")
}
