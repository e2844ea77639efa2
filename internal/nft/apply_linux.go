package nft

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// Apply replaces our table with r in one netlink batch: the old table and
// the new one never coexist, and a failure leaves the old one as it was.
// netnsFd names the network namespace (a file descriptor of its nsfs file),
// or is -1 for the caller's.
func Apply(r Ruleset, netnsFd int) error {
	c, err := conn(netnsFd)
	if err != nil {
		return err
	}
	table := &nftables.Table{Family: nftables.TableFamilyINet, Name: r.Table}
	// Adding an existing table is a no-op, so the delete never fails.
	c.AddTable(table)
	c.DelTable(table)
	c.AddTable(table)
	sets := map[string]*nftables.Set{}
	for _, s := range r.Sets {
		set := &nftables.Set{Table: table, Name: s.Name, KeyType: nftables.TypeIPAddr, Interval: !s.Timeout, HasTimeout: s.Timeout, KeyByteOrder: binaryutil.BigEndian}
		if s.IPv6 {
			set.KeyType = nftables.TypeIP6Addr
		}
		if s.Flows {
			set.KeyType, set.Concatenation = flowType, true
		}
		if err := c.AddSet(set, intervals(s.Elements)); err != nil {
			return fmt.Errorf("set %s: %w", s.Name, err)
		}
		sets[s.Name] = set
	}
	accept := nftables.ChainPolicyAccept
	chains := make([]*nftables.Chain, len(r.Chains))
	// Every chain exists before a rule jumps to it.
	for i, ch := range r.Chains {
		chain := &nftables.Chain{Name: ch.Name, Table: table}
		if b := ch.Base; b != nil {
			chain.Type = nftables.ChainType(b.Type)
			chain.Policy = &accept
			chain.Hooknum, chain.Priority = hook(b.Hook), priority(b.Priority)
		}
		chains[i] = c.AddChain(chain)
	}
	for i, ch := range r.Chains {
		for _, rule := range ch.Rules {
			e, err := ruleExprs(rule, sets)
			if err != nil {
				return fmt.Errorf("chain %s: %s: %w", ch.Name, rule, err)
			}
			c.AddRule(&nftables.Rule{Table: table, Chain: chains[i], Exprs: e})
		}
	}
	if err := c.Flush(); err != nil {
		if errors.Is(err, unix.ENOENT) {
			// An expression the kernel has no module for.
			return fmt.Errorf("%w (the kernel lacks a module of table %s: nft_socket, nft_reject_inet, nft_masq or nft_ct: modprobe them): %w", ErrUnavailable, r.Table, err)
		}
		return unavailable(err)
	}
	return nil
}

// Delete removes our table; a missing table is no error, nor is a kernel
// without nf_tables (which cannot hold one).
func Delete(table string, netnsFd int) error {
	ok, err := Exists(table, netnsFd)
	if errors.Is(err, ErrUnavailable) {
		return nil
	}
	if err != nil || !ok {
		return err
	}
	c, err := conn(netnsFd)
	if err != nil {
		return err
	}
	c.DelTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: table})
	if err := c.Flush(); err != nil && !errors.Is(err, unix.ENOENT) {
		return unavailable(err)
	}
	return nil
}

// Exists reports whether our table exists.
func Exists(table string, netnsFd int) (bool, error) {
	c, err := conn(netnsFd)
	if err != nil {
		return false, err
	}
	tables, err := c.ListTablesOfFamily(nftables.TableFamilyINet)
	if err != nil {
		return false, unavailable(err)
	}
	for _, t := range tables {
		if t.Name == table {
			return true, nil
		}
	}
	return false, nil
}

func conn(netnsFd int) (*nftables.Conn, error) {
	var opts []nftables.ConnOption
	if netnsFd >= 0 {
		opts = append(opts, nftables.WithNetNSFd(netnsFd))
	}
	c, err := nftables.New(opts...)
	if err != nil {
		return nil, unavailable(err)
	}
	return c, nil
}

// ErrUnavailable marks errors of a kernel without nf_tables.
var ErrUnavailable = errors.New("nftables unavailable")

func unavailable(err error) error {
	for _, e := range []error{unix.EPROTONOSUPPORT, unix.EAFNOSUPPORT, unix.EOPNOTSUPP, unix.ENOPROTOOPT} {
		if errors.Is(err, e) {
			return fmt.Errorf("%w (the kernel needs nf_tables, nft_masq and nft_reject_inet: modprobe nf_tables): %w", ErrUnavailable, err)
		}
	}
	return err
}

func hook(h string) *nftables.ChainHook {
	switch h {
	case "input":
		return nftables.ChainHookInput
	case "forward":
		return nftables.ChainHookForward
	case "output":
		return nftables.ChainHookOutput
	case "postrouting":
		return nftables.ChainHookPostrouting
	}
	panic("nft: unknown hook " + h)
}

func priority(p string) *nftables.ChainPriority {
	switch p {
	case "filter":
		return nftables.ChainPriorityFilter
	case "srcnat":
		return nftables.ChainPriorityNATSource
	}
	panic("nft: unknown priority " + p)
}

// intervals turns prefixes into the start/end elements of an interval set;
// a range that reaches the top of the address space has no end element.
func intervals(ps []netip.Prefix) []nftables.SetElement {
	var els []nftables.SetElement
	for _, p := range ps {
		p = p.Masked()
		els = append(els, nftables.SetElement{Key: p.Addr().AsSlice()})
		if end, ok := after(p); ok {
			els = append(els, nftables.SetElement{Key: end.AsSlice(), IntervalEnd: true})
		}
	}
	return els
}

// after returns the first address after p.
func after(p netip.Prefix) (netip.Addr, bool) {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	last, _ := netip.AddrFromSlice(b)
	next := last.Next()
	return next, next.IsValid()
}

// flowType is the key of a Flows set.
var flowType = func() nftables.SetDatatype {
	t, err := nftables.ConcatSetType(nftables.TypeIPAddr, nftables.TypeInetProto, nftables.TypeInetService)
	if err != nil {
		panic(err) // three types are within its limit
	}
	return t
}()

var nfproto = map[bool]byte{false: unix.NFPROTO_IPV4, true: unix.NFPROTO_IPV6}

func ruleExprs(r Rule, sets map[string]*nftables.Set) ([]expr.Any, error) {
	var out []expr.Any
	for _, m := range r.Match {
		e, err := matchExprs(m, sets)
		if err != nil {
			return nil, err
		}
		out = append(out, e...)
	}
	switch r.Verdict.Kind {
	case Accept:
		out = append(out, &expr.Verdict{Kind: expr.VerdictAccept})
	case Drop:
		out = append(out, &expr.Verdict{Kind: expr.VerdictDrop})
	case Jump:
		out = append(out, &expr.Verdict{Kind: expr.VerdictJump, Chain: r.Verdict.Chain})
	case RejectAdminProhibited:
		out = append(out, &expr.Reject{Type: unix.NFT_REJECT_ICMPX_UNREACH, Code: unix.NFT_REJECT_ICMPX_ADMIN_PROHIBITED})
	case Masquerade:
		out = append(out, &expr.Masq{})
	case Log:
		out = append(out, &expr.Log{Key: 1<<unix.NFTA_LOG_PREFIX | 1<<unix.NFTA_LOG_GROUP, Group: r.Verdict.Group, Data: []byte(r.Verdict.Prefix)})
	default:
		return nil, fmt.Errorf("unknown verdict %d", r.Verdict.Kind)
	}
	return out, nil
}

// matchExprs emits what nft emits for the same text, so that nft list
// prints it back as Match.String.
func matchExprs(m Match, sets map[string]*nftables.Set) ([]expr.Any, error) {
	op := expr.CmpOpEq
	if m.Not {
		op = expr.CmpOpNeq
	}
	switch m.Kind {
	case MatchIIFName, MatchOIFName:
		key := expr.MetaKeyIIFNAME
		if m.Kind == MatchOIFName {
			key = expr.MetaKeyOIFNAME
		}
		return []expr.Any{
			&expr.Meta{Key: key, Register: 1},
			&expr.Cmp{Op: op, Register: 1, Data: ifname(m.Name)},
		}, nil
	case MatchEstablished:
		return []expr.Any{
			&expr.Ct{Register: 1, Key: expr.CtKeySTATE},
			&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
				Mask: binaryutil.NativeEndian.PutUint32(expr.CtStateBitESTABLISHED | expr.CtStateBitRELATED),
				Xor:  make([]byte, 4)},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: make([]byte, 4)},
		}, nil
	case MatchDAddr, MatchSAddr:
		p := m.Prefix.Masked()
		v6 := !p.Addr().Is4()
		off := map[[2]bool]uint32{{false, false}: 16, {false, true}: 12, {true, false}: 24, {true, true}: 8}[[2]bool{v6, m.Kind == MatchSAddr}]
		out := []expr.Any{
			&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{nfproto[v6]}},
		}
		// A byte-aligned prefix loads just its bytes; any other loads the
		// whole address and masks it.
		addr := p.Addr().AsSlice()
		n := p.Bits() / 8
		if p.Bits()%8 != 0 {
			n = len(addr)
		}
		out = append(out, &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: uint32(n)})
		if p.Bits()%8 != 0 {
			mask := make([]byte, n)
			for i := 0; i < p.Bits(); i++ {
				mask[i/8] |= 0x80 >> (i % 8)
			}
			out = append(out, &expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: uint32(n), Mask: mask, Xor: make([]byte, n)})
		}
		return append(out, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: addr[:n]}), nil
	case MatchDAddrSet:
		set, ok := sets[m.Name]
		if !ok {
			return nil, fmt.Errorf("no set %s", m.Name)
		}
		off, n := uint32(16), uint32(4)
		if m.IPv6 {
			off, n = 24, 16
		}
		return []expr.Any{
			&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{nfproto[m.IPv6]}},
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: n},
			&expr.Lookup{SourceRegister: 1, SetName: set.Name, SetID: set.ID},
		}, nil
	case MatchFlowSet:
		set, ok := sets[m.Name]
		if !ok {
			return nil, fmt.Errorf("no set %s", m.Name)
		}
		// The parts of a concatenation each take a 4-byte register:
		// address in 1 (NFT_REG32_00 is its first word), protocol in
		// NFT_REG32_01, port in NFT_REG32_02, as nft emits them.
		return []expr.Any{
			&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.NFPROTO_IPV4}},
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 9},
			&expr.Payload{DestRegister: 10, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
			&expr.Lookup{SourceRegister: 1, SetName: set.Name, SetID: set.ID},
		}, nil
	case MatchDPort:
		proto := map[string]byte{"tcp": unix.IPPROTO_TCP, "udp": unix.IPPROTO_UDP}[m.Proto]
		if proto == 0 {
			return nil, fmt.Errorf("unknown protocol %q", m.Proto)
		}
		out := []expr.Any{
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		}
		if m.PortLo == m.PortHi {
			return append(out, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: be16(m.PortLo)}), nil
		}
		return append(out,
			&expr.Cmp{Op: expr.CmpOpGte, Register: 1, Data: be16(m.PortLo)},
			&expr.Cmp{Op: expr.CmpOpLte, Register: 1, Data: be16(m.PortHi)},
		), nil
	case MatchSocketMark:
		return []expr.Any{
			&expr.Socket{Key: expr.SocketKeyMark, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(m.Mark)},
		}, nil
	case MatchLimit:
		return []expr.Any{&expr.Limit{Type: expr.LimitTypePkts, Rate: uint64(m.PortLo), Unit: expr.LimitTimeSecond, Burst: uint32(m.PortHi)}}, nil
	}
	return nil, fmt.Errorf("unknown match %d", m.Kind)
}

func ifname(s string) []byte {
	b := make([]byte, unix.IFNAMSIZ)
	copy(b, s)
	return b
}

func be16(v uint16) []byte {
	return binary.BigEndian.AppendUint16(nil, v)
}
