package seccomp

import (
	"errors"
	"fmt"

	"golang.org/x/net/bpf"
)

// Offsets in struct seccomp_data. The args are u64; the low 32 bits are at
// the lower address on little-endian architectures (both supported ones).
const (
	offNr   = 0
	offArch = 4
)

func offArgLow(i int) uint32 { return uint32(16 + 8*i) }

// maxInsns is BPF_MAXINSNS, the kernel's limit on a classic BPF program.
const maxInsns = 4096

// Program shape:
//
//	ld  arch
//	jeq AUDIT_ARCH_*        else KILL_PROCESS
//	ld  nr
//	jeq NR_ioctl ...        the hot syscalls with argument rules
//	    binary search over the spans of numbers (jge only): each leaf is a
//	    ret, or the block of a rule with argument conditions
//	    blocks: ld arg (low half); jeq/jset ...; ret
//	    rets
//
// Conditional jumps reach at most 255 instructions ahead; the assembler
// below retargets a longer one to an identical ret within reach, or puts a
// copy of the ret (or a ja) right after the jump.

type insKind int

const (
	kLabel insKind = iota // pseudo-instruction: a jump target
	kLd                   // A = seccomp_data[k] (32 bits)
	kJmp                  // if A cond k goto jt else goto jf
	kJa                   // goto jt
	kRet                  // return k
)

type ins struct {
	kind   insKind
	cond   bpf.JumpTest // kJmp: JumpEqual, JumpGreaterOrEqual or JumpBitsSet
	k      uint32
	jt, jf int // label ids
	label  int // kLabel
}

type compiler struct {
	prog   []ins
	labels int
	rets   map[Action]int // label of the shared ret for an action
	blocks map[*rule]int  // label of a rule's block
}

func (c *compiler) newLabel() int { c.labels++; return c.labels }

func (c *compiler) place(l int) { c.prog = append(c.prog, ins{kind: kLabel, label: l}) }

func (c *compiler) emit(i ins) { c.prog = append(c.prog, i) }

// ret returns the label of the shared "ret a".
func (c *compiler) ret(a Action) int {
	l, ok := c.rets[a]
	if !ok {
		l = c.newLabel()
		c.rets[a] = l
	}
	return l
}

func (c *compiler) target(lf leaf) int {
	if lf.rule == nil {
		return c.ret(lf.action)
	}
	l, ok := c.blocks[lf.rule]
	if !ok {
		l = c.newLabel()
		c.blocks[lf.rule] = l
	}
	return l
}

// node emits the search over spans (sorted, contiguous) and returns the
// label where it starts.
func (c *compiler) node(ss []span) int {
	if len(ss) == 1 {
		return c.target(ss[0].leaf)
	}
	l := c.newLabel()
	c.place(l)
	mid := len(ss) / 2
	at := len(c.prog)
	c.emit(ins{kind: kJmp, cond: bpf.JumpGreaterOrEqual, k: ss[mid].lo})
	jf := c.node(ss[:mid])
	jt := c.node(ss[mid:])
	c.prog[at].jt, c.prog[at].jf = jt, jf
	return l
}

// block emits a rule's argument tests.
func (c *compiler) block(r *rule, l int) {
	c.place(l)
	loaded := -1
	for _, cd := range r.Conds {
		if cd.Arg != loaded {
			c.emit(ins{kind: kLd, k: offArgLow(cd.Arg)})
			loaded = cd.Arg
		}
		hit := c.ret(cd.Action)
		switch cd.Op {
		case opIn:
			for _, v := range cd.Values {
				nx := c.newLabel()
				c.emit(ins{kind: kJmp, cond: bpf.JumpEqual, k: v.V, jt: hit, jf: nx})
				c.place(nx)
			}
		case opNotIn:
			cont := c.newLabel()
			for i, v := range cd.Values {
				nx := c.newLabel()
				if i == len(cd.Values)-1 {
					nx = hit
				}
				c.emit(ins{kind: kJmp, cond: bpf.JumpEqual, k: v.V, jt: cont, jf: nx})
				if i < len(cd.Values)-1 {
					c.place(nx)
				}
			}
			c.place(cont)
		case opAnyBit:
			nx := c.newLabel()
			c.emit(ins{kind: kJmp, cond: bpf.JumpBitsSet, k: cd.Values[0].V, jt: hit, jf: nx})
			c.place(nx)
		}
	}
	c.emit(ins{kind: kRet, k: uint32(r.Action)})
}

func compile(p *plan) ([]bpf.RawInstruction, error) {
	c := &compiler{rets: map[Action]int{}, blocks: map[*rule]int{}}
	ss := p.spans()

	start := c.newLabel()
	c.emit(ins{kind: kLd, k: offArch})
	c.emit(ins{kind: kJmp, cond: bpf.JumpEqual, k: p.arch.audit, jt: start, jf: c.ret(badArch)})
	c.place(start)
	c.emit(ins{kind: kLd, k: offNr})
	if len(ss) < 2 {
		return nil, errors.New("spans do not cover the number space")
	}
	for _, name := range hot {
		for _, e := range p.entries {
			if e.Name == name && e.Rule != nil {
				nx := c.newLabel()
				c.emit(ins{kind: kJmp, cond: bpf.JumpEqual, k: e.Nr, jt: c.target(leaf{e.Action, e.Rule}), jf: nx})
				c.place(nx)
			}
		}
	}
	c.node(ss)

	// Blocks and rets in a fixed order, so that the output is reproducible.
	var order []*rule
	for i := range rules {
		if _, ok := c.blocks[&rules[i]]; ok {
			order = append(order, &rules[i])
		}
	}
	if _, ok := c.blocks[&noLocalSockets]; ok {
		order = append(order, &noLocalSockets)
	}
	for _, r := range order {
		c.block(r, c.blocks[r])
	}
	for _, a := range []Action{allow, eperm, enosys, eafnosupport, killProcess} {
		if l, ok := c.rets[a]; ok {
			c.place(l)
			c.emit(ins{kind: kRet, k: uint32(a)})
			delete(c.rets, a)
		}
	}
	if len(c.rets) != 0 {
		return nil, fmt.Errorf("action without a ret: %v", c.rets)
	}
	insns, err := c.assemble()
	if err != nil {
		return nil, err
	}
	if len(insns) > maxInsns {
		return nil, fmt.Errorf("%d instructions, the kernel takes at most %d", len(insns), maxInsns)
	}
	return bpf.Assemble(insns)
}

// layout returns the position of each instruction and label.
func (c *compiler) layout() (pos []int, at map[int]int) {
	pos = make([]int, len(c.prog))
	at = map[int]int{}
	n := 0
	for i, in := range c.prog {
		pos[i] = n
		if in.kind == kLabel {
			at[in.label] = n
			continue
		}
		n++
	}
	return pos, at
}

// fixFar finds one conditional jump that is too long and shortens it.
// It reports whether it changed the program.
func (c *compiler) fixFar() (bool, error) {
	pos, at := c.layout()
	for i, in := range c.prog {
		if in.kind != kJmp {
			continue
		}
		for _, br := range []*int{&c.prog[i].jt, &c.prog[i].jf} {
			tp, ok := at[*br]
			if !ok {
				return false, fmt.Errorf("label %d not placed", *br)
			}
			d := tp - pos[i] - 1
			if d < 0 {
				return false, fmt.Errorf("backward jump at %d", pos[i])
			}
			if d <= 255 {
				continue
			}
			// The instruction the label stands for.
			t := -1
			for j := range c.prog {
				if pos[j] == tp && c.prog[j].kind != kLabel {
					t = j
					break
				}
			}
			if t < 0 {
				return false, fmt.Errorf("label %d at the end of the program", *br)
			}
			tgt := c.prog[t]
			if tgt.kind == kRet {
				// An identical ret within reach?
				for j := i + 1; j < len(c.prog) && pos[j] <= pos[i]+256; j++ {
					if c.prog[j].kind == kRet && c.prog[j].k == tgt.k {
						l := c.newLabel()
						c.prog = append(c.prog[:j], append([]ins{{kind: kLabel, label: l}}, c.prog[j:]...)...)
						*br = l // c.prog[i] is before j: not moved
						return true, nil
					}
				}
			}
			// Right after the jump (which never falls through): a copy of
			// the ret, or a ja to the far target.
			l := c.newLabel()
			tramp := ins{kind: kJa, jt: *br}
			if tgt.kind == kRet {
				tramp = tgt
			}
			*br = l
			c.prog = append(c.prog[:i+1], append([]ins{{kind: kLabel, label: l}, tramp}, c.prog[i+1:]...)...)
			return true, nil
		}
	}
	return false, nil
}

func (c *compiler) assemble() ([]bpf.Instruction, error) {
	for range maxInsns {
		changed, err := c.fixFar()
		if err != nil {
			return nil, err
		}
		if !changed {
			break
		}
	}
	pos, at := c.layout()
	var out []bpf.Instruction
	for i, in := range c.prog {
		switch in.kind {
		case kLabel:
		case kLd:
			out = append(out, bpf.LoadAbsolute{Off: in.k, Size: 4})
		case kRet:
			out = append(out, bpf.RetConstant{Val: in.k})
		case kJa:
			out = append(out, bpf.Jump{Skip: uint32(at[in.jt] - pos[i] - 1)})
		case kJmp:
			dt, df := at[in.jt]-pos[i]-1, at[in.jf]-pos[i]-1
			if dt < 0 || df < 0 || dt > 255 || df > 255 {
				return nil, fmt.Errorf("jump at %d out of range", pos[i])
			}
			out = append(out, bpf.JumpIf{Cond: in.cond, Val: in.k, SkipTrue: uint8(dt), SkipFalse: uint8(df)})
		}
	}
	return out, nil
}
