package netnsdns

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/nft"
)

// nfnetlink_log, from linux/netfilter/nfnetlink_log.h (x/sys/unix lacks it).
const (
	nfulnlMsgPacket   = 0
	nfulnlMsgConfig   = 1
	nfulaCfgCmd       = 1
	nfulaCfgMode      = 2
	nfulnlCfgCmdBind  = 1
	nfulnlCopyPacket  = 2
	nfulaPayload      = 9
	nfulaPrefix       = 10
	nflogCopyRange    = 64 // the IP header and the ports are enough
	nlmsgHdrLen       = 16
	nfgenHdrLen       = 4
	nlaHdrLen         = 4
	nflogMsgTypeShift = 8
)

func unsafePointer(b *byte) unsafe.Pointer { return unsafe.Pointer(b) }

// readDrops binds nflog group nft.LogGroup of the host's namespace and
// writes each logged drop to the denial log of the namespace its prefix
// names, until ctx ends.
func readDrops(ctx context.Context, l *DenialLog) error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
	if err != nil {
		return fmt.Errorf("netlink: %w", err)
	}
	defer unix.Close(fd)
	if err := nflogBind(fd); err != nil {
		return err
	}
	return nflogRead(func() bool { return ctx.Err() != nil }, fd, "", l)
}

// nflogBind binds fd, a NETLINK_NETFILTER socket, to nflog group
// nft.LogGroup of the socket's namespace, copying the packets' headers.
func nflogBind(fd int) error {
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("netlink bind: %w", err)
	}
	// Short: a reader notices within that that it is to stop.
	tv := unix.NsecToTimeval((250 * time.Millisecond).Nanoseconds())
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	cmd := nflogConfig(1, nft.LogGroup, nla(nfulaCfgCmd, []byte{nfulnlCfgCmdBind}))
	mode := make([]byte, 6)
	binary.BigEndian.PutUint32(mode, nflogCopyRange)
	mode[4] = nfulnlCopyPacket
	cfgMode := nflogConfig(2, nft.LogGroup, nla(nfulaCfgMode, mode))
	for _, m := range [][]byte{cmd, cfgMode} {
		if err := unix.Sendto(fd, m, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
			return fmt.Errorf("nflog config: %w", err)
		}
		if err := readAck(fd); err != nil {
			return fmt.Errorf("nflog group %d: %w", nft.LogGroup, err)
		}
	}
	return nil
}

// nflogRead writes the drops fd reads to the denial log until stop says
// so: of the namespace their prefix names, or, with only set, of only
// that one (a socket of a namespace's own nflog, where nothing else can
// log; a prefix that names another is ignored).
func nflogRead(stop func() bool, fd int, only string, l *DenialLog) error {
	buf := make([]byte, 1<<16)
	for !stop() {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err == unix.EAGAIN || err == unix.EINTR || err == unix.ENOBUFS {
			continue
		}
		if err != nil {
			return err
		}
		for b := buf[:n]; len(b) >= nlmsgHdrLen; {
			size := int(binary.NativeEndian.Uint32(b[0:4]))
			typ := binary.NativeEndian.Uint16(b[4:6])
			if size < nlmsgHdrLen || size > len(b) {
				break
			}
			if typ == unix.NFNL_SUBSYS_ULOG<<nflogMsgTypeShift|nfulnlMsgPacket && size >= nlmsgHdrLen+nfgenHdrLen {
				if ns, proto, dst, port, ok := parseDrop(b[nlmsgHdrLen+nfgenHdrLen : size]); ok && (only == "" || ns == only) {
					l.Dropped(ns, proto, dst, port)
				}
			}
			b = b[min(align4(size), len(b)):]
		}
	}
	return nil
}

func nflogConfig(seq uint32, group uint16, attr []byte) []byte {
	m := make([]byte, nlmsgHdrLen+nfgenHdrLen, nlmsgHdrLen+nfgenHdrLen+len(attr))
	m = append(m, attr...)
	binary.NativeEndian.PutUint32(m[0:4], uint32(len(m)))
	binary.NativeEndian.PutUint16(m[4:6], unix.NFNL_SUBSYS_ULOG<<nflogMsgTypeShift|nfulnlMsgConfig)
	binary.NativeEndian.PutUint16(m[6:8], unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	binary.NativeEndian.PutUint32(m[8:12], seq)
	m[16] = unix.AF_UNSPEC
	m[17] = unix.NFNETLINK_V0
	binary.BigEndian.PutUint16(m[18:20], group)
	return m
}

func nla(typ uint16, data []byte) []byte {
	a := make([]byte, align4(nlaHdrLen+len(data)))
	binary.NativeEndian.PutUint16(a[0:2], uint16(nlaHdrLen+len(data)))
	binary.NativeEndian.PutUint16(a[2:4], typ)
	copy(a[nlaHdrLen:], data)
	return a
}

func align4(n int) int { return (n + 3) &^ 3 }

func readAck(fd int) error {
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return err
	}
	if n >= nlmsgHdrLen+4 && binary.NativeEndian.Uint16(buf[4:6]) == unix.NLMSG_ERROR {
		if e := int32(binary.NativeEndian.Uint32(buf[16:20])); e != 0 {
			return unix.Errno(-e)
		}
	}
	return nil
}

// parseDrop reads the namespace from the prefix and the destination from
// the IPv4 header in the payload of one nflog packet message's attributes.
func parseDrop(attrs []byte) (ns, proto string, dst netip.Addr, port uint16, ok bool) {
	var prefix string
	var payload []byte
	for len(attrs) >= nlaHdrLen {
		l := int(binary.NativeEndian.Uint16(attrs[0:2]))
		typ := binary.NativeEndian.Uint16(attrs[2:4]) & 0x3fff
		if l < nlaHdrLen || l > len(attrs) {
			break
		}
		switch typ {
		case nfulaPrefix:
			prefix = strings.TrimRight(string(attrs[nlaHdrLen:l]), "\x00")
		case nfulaPayload:
			payload = attrs[nlaHdrLen:l]
		}
		attrs = attrs[min(align4(l), len(attrs)):]
	}
	rest, found := strings.CutPrefix(prefix, nft.LogPrefix)
	if !found {
		return "", "", netip.Addr{}, 0, false
	}
	ns = strings.TrimSpace(rest)
	proto, dst, port, ok = parseIPv4(payload)
	return ns, proto, dst, port, ok && ns != ""
}

// parseIPv4 returns the protocol, destination and destination port of an
// IPv4 packet.
func parseIPv4(p []byte) (proto string, dst netip.Addr, port uint16, ok bool) {
	if len(p) < 20 || p[0]>>4 != 4 {
		return "", netip.Addr{}, 0, false
	}
	ihl := int(p[0]&0x0f) * 4
	dst = netip.AddrFrom4([4]byte(p[16:20]))
	switch p[9] {
	case unix.IPPROTO_TCP:
		proto = "tcp"
	case unix.IPPROTO_UDP:
		proto = "udp"
	case unix.IPPROTO_ICMP:
		return "icmp", dst, 0, true
	default:
		return fmt.Sprintf("protocol %d", p[9]), dst, 0, true
	}
	if ihl < 20 || len(p) < ihl+4 {
		return proto, dst, 0, true
	}
	return proto, dst, binary.BigEndian.Uint16(p[ihl+2 : ihl+4]), true
}
