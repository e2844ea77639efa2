package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// errSplitIndex is returned by gitlinks for a split index, whose entries
// are partly in another file.
var errSplitIndex = errors.New("split index (core.splitIndex) is not supported")

// gitlinks returns the paths of the submodules (entries of mode 160000, but
// not those a sparse checkout leaves out) in
// a git index file (format versions 2, 3 and 4, SHA-1 or SHA-256). Host git
// runs git in each of them (git status looks for changes in submodules),
// reading the submodule's own .git.
func gitlinks(b []byte) ([]string, error) {
	if len(b) < 12 || string(b[:4]) != "DIRC" {
		return nil, errors.New("not a git index")
	}
	v := binary.BigEndian.Uint32(b[4:])
	if v < 2 || v > 4 {
		return nil, fmt.Errorf("index version %d is not supported", v)
	}
	var firstErr error
	for _, hashLen := range []int{20, 32} {
		links, err := readEntries(b, v, hashLen)
		if err == nil {
			return links, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, firstErr
}

func readEntries(b []byte, version uint32, hashLen int) ([]string, error) {
	n := binary.BigEndian.Uint32(b[8:])
	bad := errors.New("malformed git index")
	off := 12
	var links []string
	var prev []byte
	empty := false
	for i := uint32(0); i < n; i++ {
		start := off
		fixed := 40 + hashLen + 2
		if off+fixed > len(b) {
			return nil, bad
		}
		mode := binary.BigEndian.Uint32(b[off+24:])
		flags := binary.BigEndian.Uint16(b[off+40+hashLen:])
		off += fixed
		skip := false
		if flags&0x4000 != 0 {
			if version < 3 || off+2 > len(b) {
				return nil, bad
			}
			// skip-worktree: outside a sparse checkout, not on disk,
			// and git does not look there.
			skip = binary.BigEndian.Uint16(b[off:])&0x4000 != 0
			off += 2
		}
		nameLen := int(flags & 0xfff)
		var name []byte
		if version == 4 {
			strip, k := gitVarint(b[off:])
			if k == 0 || strip > uint64(len(prev)) {
				return nil, bad
			}
			off += k
			end := indexNUL(b, off)
			if end < 0 {
				return nil, bad
			}
			name = append(append([]byte(nil), prev[:len(prev)-int(strip)]...), b[off:end]...)
			off = end + 1
		} else {
			end := indexNUL(b, off)
			if end < 0 {
				return nil, bad
			}
			name = b[off:end]
			// 1 to 8 NULs pad the entry to a multiple of 8 bytes.
			off = start + (end-start+8)&^7
			if off > len(b) {
				return nil, bad
			}
		}
		if nameLen < 0xfff && len(name) != nameLen {
			return nil, bad
		}
		// A split index leaves names out; it is refused below.
		empty = empty || len(name) == 0
		if mode == 0o160000 && !skip {
			links = append(links, string(name))
		}
		prev = name
	}
	// Extensions, then the checksum.
	for off+8 <= len(b)-hashLen {
		sig := string(b[off : off+4])
		size := int(binary.BigEndian.Uint32(b[off+4:]))
		if sig == "link" {
			return nil, errSplitIndex
		}
		if size < 0 || off+8+size > len(b)-hashLen {
			return nil, bad
		}
		off += 8 + size
	}
	if off != len(b)-hashLen || empty {
		return nil, bad
	}
	return links, nil
}

func indexNUL(b []byte, from int) int {
	for i := from; i < len(b); i++ {
		if b[i] == 0 {
			return i
		}
	}
	return -1
}

// gitVarint decodes git's offset varint (varint.c) and returns it and its
// length, or 0 for the length if it is malformed.
func gitVarint(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	v := uint64(c & 127)
	i := 1
	for c&128 != 0 {
		if i >= len(b) || i > 9 {
			return 0, 0
		}
		v++
		c = b[i]
		i++
		v = v<<7 + uint64(c&127)
	}
	return v, i
}
