package nft

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Socket opens a NETLINK_NETFILTER socket in the network namespace of
// netnsFd. The socket stays in that namespace wherever its descriptor
// goes: netns-setup hands such sockets to netns-dns, which reaches the
// table inside a sandbox namespace (pins, nflog) through them without the
// CAP_SYS_ADMIN that entering the namespace takes.
func Socket(netnsFd int) (int, error) {
	type result struct {
		fd  int
		err error
	}
	ch := make(chan result, 1)
	go func() {
		// Never unlocked: the thread, in the other namespace, ends with
		// the goroutine.
		runtime.LockOSThread()
		if err := unix.Setns(netnsFd, unix.CLONE_NEWNET); err != nil {
			ch <- result{-1, os.NewSyscallError("setns", err)}
			return
		}
		fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
		if err != nil {
			ch <- result{-1, unavailable(os.NewSyscallError("socket", err))}
			return
		}
		ch <- result{fd, nil}
	}()
	r := <-ch
	return r.fd, r.err
}

// FdPinner pins addresses into sets over a NETLINK_NETFILTER socket it
// was given (see Socket), in that socket's namespace.
type FdPinner struct {
	mu  sync.Mutex // one transaction at a time on fd
	fd  int
	seq uint32
}

// pinTimeout is how long Pin waits for the kernel's answer.
const pinTimeout = 2 * time.Second

// NewFdPinner pins over fd, which it owns from now on.
func NewFdPinner(fd int) (*FdPinner, error) {
	tv := unix.NsecToTimeval(pinTimeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return nil, os.NewSyscallError("setsockopt", err)
	}
	return &FdPinner{fd: fd, seq: uint32(time.Now().UnixNano())}, nil
}

// Close closes the socket.
func (p *FdPinner) Close() error { return unix.Close(p.fd) }

// Pin is Pinner.Pin over the socket: addrs (IPv4; others are skipped) go
// into set of table with timeout, in one transaction (add, delete, add,
// which replaces the timeout of those already there). It returns only
// once the kernel acknowledged every change, or with its error.
func (p *FdPinner) Pin(table, set string, addrs []netip.Addr, timeout time.Duration) error {
	var keys [][]byte
	for _, a := range addrs {
		if a.Is4() {
			keys = append(keys, a.AsSlice())
		}
	}
	return p.transaction(table, set, keys, timeout, true)
}

// PinFlows is Pinner.PinFlows over the socket.
func (p *FdPinner) PinFlows(table, set string, flows []Flow, timeout time.Duration) error {
	return p.transaction(table, set, flowKeys(flows), timeout, true)
}

// UnpinFlows is Pinner.UnpinFlows over the socket.
func (p *FdPinner) UnpinFlows(table, set string, flows []Flow) error {
	return p.transaction(table, set, flowKeys(flows), time.Second, false)
}

// FlushFlows removes every element of set of table: a DELSETELEM that
// names no element.
func (p *FdPinner) FlushFlows(table, set string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var body []byte
	body = append(body, attr(unix.NFTA_SET_ELEM_LIST_TABLE, append([]byte(table), 0))...)
	body = append(body, attr(unix.NFTA_SET_ELEM_LIST_SET, append([]byte(set), 0))...)
	first := p.seq + 1
	var b []byte
	b = nlmsg(b, unix.NFNL_MSG_BATCH_BEGIN, unix.NLM_F_REQUEST, p.next(), unix.AF_UNSPEC, unix.NFNL_SUBSYS_NFTABLES, nil)
	seq := p.next()
	b = nlmsg(b, unix.NFNL_SUBSYS_NFTABLES<<8|unix.NFT_MSG_DELSETELEM, unix.NLM_F_REQUEST|unix.NLM_F_ACK, seq, unix.NFPROTO_INET, 0, body)
	b = nlmsg(b, unix.NFNL_MSG_BATCH_END, unix.NLM_F_REQUEST, p.next(), unix.AF_UNSPEC, unix.NFNL_SUBSYS_NFTABLES, nil)
	return p.exchange(table, set, b, first, map[uint32]bool{seq: false})
}

func flowKeys(flows []Flow) [][]byte {
	var keys [][]byte
	for _, el := range flowElements(flows, 0) {
		keys = append(keys, el.Key)
	}
	return keys
}

// transaction adds keys to set of table with timeout and deletes them
// (adding first makes the delete find each), and with again adds them
// anew, in one batch.
func (p *FdPinner) transaction(table, set string, keys [][]byte, timeout time.Duration, again bool) error {
	if len(keys) == 0 {
		return nil
	}
	ops := []uint16{unix.NFT_MSG_NEWSETELEM, unix.NFT_MSG_DELSETELEM}
	if again {
		ops = append(ops, unix.NFT_MSG_NEWSETELEM)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	first := p.seq + 1
	var b []byte
	b = nlmsg(b, unix.NFNL_MSG_BATCH_BEGIN, unix.NLM_F_REQUEST, p.next(), unix.AF_UNSPEC, unix.NFNL_SUBSYS_NFTABLES, nil)
	acks := map[uint32]bool{}
	for _, typ := range ops {
		seq := p.next()
		acks[seq] = false
		flags := uint16(unix.NLM_F_REQUEST | unix.NLM_F_ACK)
		if typ == unix.NFT_MSG_NEWSETELEM {
			flags |= unix.NLM_F_CREATE
		}
		b = nlmsg(b, unix.NFNL_SUBSYS_NFTABLES<<8|typ, flags, seq, unix.NFPROTO_INET, 0, setElems(table, set, keys, timeout, typ == unix.NFT_MSG_NEWSETELEM))
	}
	b = nlmsg(b, unix.NFNL_MSG_BATCH_END, unix.NLM_F_REQUEST, p.next(), unix.AF_UNSPEC, unix.NFNL_SUBSYS_NFTABLES, nil)
	return p.exchange(table, set, b, first, acks)
}

// exchange sends batch b and waits for the acks (sequence numbers from
// first on are this batch's); p.mu is held.
func (p *FdPinner) exchange(table, set string, b []byte, first uint32, acks map[uint32]bool) error {
	if err := unix.Sendto(p.fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return os.NewSyscallError("sendto", err)
	}
	buf := make([]byte, 8192)
	for pending := len(acks); pending > 0; {
		n, _, err := unix.Recvfrom(p.fd, buf, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.EAGAIN) {
			return fmt.Errorf("pin in %s %s: no answer from the kernel within %s", table, set, pinTimeout)
		}
		if err != nil {
			return os.NewSyscallError("recvfrom", err)
		}
		for m := buf[:n]; len(m) >= unix.NLMSG_HDRLEN; {
			size := int(binary.NativeEndian.Uint32(m[0:4]))
			if size < unix.NLMSG_HDRLEN || size > len(m) {
				break
			}
			typ := binary.NativeEndian.Uint16(m[4:6])
			seq := binary.NativeEndian.Uint32(m[8:12])
			// Answers to an earlier transaction (one that timed out) are
			// not this one's.
			if typ == unix.NLMSG_ERROR && size >= unix.NLMSG_HDRLEN+4 && seq >= first && seq <= p.seq {
				if e := int32(binary.NativeEndian.Uint32(m[16:20])); e != 0 {
					return fmt.Errorf("pin in %s %s: %w", table, set, unix.Errno(-e))
				}
				if done, ok := acks[seq]; ok && !done {
					acks[seq] = true
					pending--
				}
			}
			m = m[min((size+3)&^3, len(m)):]
		}
	}
	return nil
}

func (p *FdPinner) next() uint32 {
	p.seq++
	return p.seq
}

// nlmsg appends a netlink message with an nfgenmsg header and data.
func nlmsg(b []byte, typ, flags uint16, seq uint32, family uint8, resID uint16, data []byte) []byte {
	h := make([]byte, unix.NLMSG_HDRLEN+4)
	binary.NativeEndian.PutUint32(h[0:4], uint32(len(h)+len(data)))
	binary.NativeEndian.PutUint16(h[4:6], typ)
	binary.NativeEndian.PutUint16(h[6:8], flags)
	binary.NativeEndian.PutUint32(h[8:12], seq)
	h[16] = family
	h[17] = unix.NFNETLINK_V0
	binary.BigEndian.PutUint16(h[18:20], resID)
	return append(append(b, h...), data...)
}

// attr is one netlink attribute, padded to 4 bytes.
func attr(typ uint16, data []byte) []byte {
	a := make([]byte, (unix.NLA_HDRLEN+len(data)+3)&^3)
	binary.NativeEndian.PutUint16(a[0:2], uint16(unix.NLA_HDRLEN+len(data)))
	binary.NativeEndian.PutUint16(a[2:4], typ)
	copy(a[unix.NLA_HDRLEN:], data)
	return a
}

// setElems is the body of a NEWSETELEM or DELSETELEM of keys in set of
// table (family inet), with timeout if withTimeout.
func setElems(table, set string, keys [][]byte, timeout time.Duration, withTimeout bool) []byte {
	var els []byte
	for _, k := range keys {
		el := attr(unix.NLA_F_NESTED|unix.NFTA_SET_ELEM_KEY, attr(unix.NFTA_DATA_VALUE, k))
		if withTimeout {
			ms := make([]byte, 8)
			binary.BigEndian.PutUint64(ms, uint64(timeout.Milliseconds()))
			el = append(el, attr(unix.NFTA_SET_ELEM_TIMEOUT, ms)...)
		}
		els = append(els, attr(unix.NLA_F_NESTED|unix.NFTA_LIST_ELEM, el)...)
	}
	var b []byte
	b = append(b, attr(unix.NFTA_SET_ELEM_LIST_TABLE, append([]byte(table), 0))...)
	b = append(b, attr(unix.NFTA_SET_ELEM_LIST_SET, append([]byte(set), 0))...)
	return append(b, attr(unix.NLA_F_NESTED|unix.NFTA_SET_ELEM_LIST_ELEMENTS, els)...)
}
