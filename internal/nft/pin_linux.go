package nft

import (
	"net/netip"
	"sync"
	"time"

	"github.com/google/nftables"
	"golang.org/x/sys/unix"
)

// Pinner adds addresses to the pin sets of namespace tables over one
// netlink socket.
type Pinner struct {
	mu sync.Mutex // one batch at a time on c
	c  *nftables.Conn
}

// NewPinner opens the socket in the namespace of netnsFd (-1: the caller's).
func NewPinner(netnsFd int) (*Pinner, error) {
	opts := []nftables.ConnOption{nftables.AsLasting()}
	if netnsFd >= 0 {
		opts = append(opts, nftables.WithNetNSFd(netnsFd))
	}
	c, err := nftables.New(opts...)
	if err != nil {
		return nil, unavailable(err)
	}
	return &Pinner{c: c}, nil
}

// Close closes the socket.
func (p *Pinner) Close() error { return p.c.CloseLasting() }

// Pin puts addrs (IPv4; others are skipped) into set of table with the
// given timeout, replacing the timeout of those already there, in one
// transaction.
func (p *Pinner) Pin(table, set string, addrs []netip.Addr, timeout time.Duration) error {
	s := &nftables.Set{Table: &nftables.Table{Family: nftables.TableFamilyINet, Name: table}, Name: set, KeyType: nftables.TypeIPAddr, HasTimeout: true}
	var els []nftables.SetElement
	for _, a := range addrs {
		if a.Is4() {
			els = append(els, nftables.SetElement{Key: a.AsSlice(), Timeout: timeout})
		}
	}
	return p.replace(s, els)
}

// replace puts els into s, replacing the timeout of those already there,
// in one transaction: add (so that the delete finds them), delete, add.
func (p *Pinner) replace(s *nftables.Set, els []nftables.SetElement) error {
	return p.cycle(s, els, true)
}

// cycle adds els to s (so that the delete finds each), deletes them and,
// with readd, adds them again, in one transaction.
func (p *Pinner) cycle(s *nftables.Set, els []nftables.SetElement, readd bool) error {
	if len(els) == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.c.SetAddElements(s, els); err != nil {
		return err
	}
	if err := p.c.SetDeleteElements(s, els); err != nil {
		return err
	}
	if readd {
		if err := p.c.SetAddElements(s, els); err != nil {
			return err
		}
	}
	return p.c.Flush()
}

// PinFlows puts flows into the Flows set of table with the given timeout,
// replacing the timeout of those already there, in one transaction.
func (p *Pinner) PinFlows(table, set string, flows []Flow, timeout time.Duration) error {
	s := flowSet(table, set)
	els := flowElements(flows, timeout)
	return p.replace(s, els)
}

// UnpinFlows removes flows from the Flows set of table; those not there
// are no error.
func (p *Pinner) UnpinFlows(table, set string, flows []Flow) error {
	return p.cycle(flowSet(table, set), flowElements(flows, time.Second), false)
}

// FlushFlows removes every flow from the Flows set of table.
func (p *Pinner) FlushFlows(table, set string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.c.FlushSet(flowSet(table, set))
	return p.c.Flush()
}

func flowSet(table, set string) *nftables.Set {
	return &nftables.Set{Table: &nftables.Table{Family: nftables.TableFamilyINet, Name: table}, Name: set, KeyType: flowType, Concatenation: true, HasTimeout: true}
}

// flowElements are the keys of flows (IPv4 ones; others are skipped): each
// part padded to 4 bytes, as the kernel keeps concatenations.
func flowElements(flows []Flow, timeout time.Duration) []nftables.SetElement {
	var els []nftables.SetElement
	for _, f := range flows {
		proto := map[string]byte{"tcp": unix.IPPROTO_TCP, "udp": unix.IPPROTO_UDP}[f.Proto]
		if !f.Addr.Is4() || proto == 0 {
			continue
		}
		key := append(f.Addr.AsSlice(), proto, 0, 0, 0, byte(f.Port>>8), byte(f.Port), 0, 0)
		els = append(els, nftables.SetElement{Key: key, Timeout: timeout})
	}
	return els
}
