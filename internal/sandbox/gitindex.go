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

// pathMax is Linux's PATH_MAX: no longer name can be checked out, so no
// index entry of a work tree has one.
const pathMax = 4096

// minEntry is the size of the smallest index entry: the fixed part and
// the name's end (a NUL, padded for versions 2 and 3; a NUL and the length
// of the prefix taken from the previous name for version 4).
func minEntry(version uint32, hashLen int) int {
	if version == 4 {
		return 40 + hashLen + 2 + 2
	}
	return (40 + hashLen + 2 + 1 + 7) &^ 7
}

// readEntries reads the entries in memory bounded by the file's size:
// the count must fit the file, each name is at most pathMax bytes, the
// names of version 4 (prefix-compressed) are built in one buffer, and the
// submodule paths kept total at most four times the file's size. A crafted
// version 4 index whose names grow by a byte per entry would otherwise
// make memory grow with the square of its size.
func readEntries(b []byte, version uint32, hashLen int) ([]string, error) {
	n := binary.BigEndian.Uint32(b[8:])
	bad := errors.New("malformed git index")
	if n > MaxIndexEntries {
		return nil, fmt.Errorf("a git index of %d entries, more than the %d read", n, MaxIndexEntries)
	}
	if uint64(n) > uint64((len(b)-12)/minEntry(version, hashLen)) {
		return nil, fmt.Errorf("malformed git index: %d entries do not fit in %d bytes", n, len(b))
	}
	budget := 4*len(b) + pathMax
	off := 12
	var links []string
	var name []byte
	if version == 4 {
		name = make([]byte, 0, pathMax)
	}
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
		if version == 4 {
			strip, k := gitVarint(b[off:])
			if k == 0 || strip > uint64(len(name)) {
				return nil, bad
			}
			off += k
			end := indexNUL(b, off, pathMax)
			if end < 0 {
				return nil, bad
			}
			keep := len(name) - int(strip)
			if keep+end-off >= pathMax {
				return nil, fmt.Errorf("malformed git index: entry %d has a name longer than %d bytes", i, pathMax-1)
			}
			name = append(name[:keep], b[off:end]...)
			off = end + 1
		} else {
			end := indexNUL(b, off, pathMax)
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
			if budget -= len(name); budget < 0 {
				return nil, fmt.Errorf("malformed git index: submodule paths longer than %d bytes in all", 4*len(b)+pathMax)
			}
			links = append(links, string(name))
		}
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

// indexNUL returns the index of the first NUL in b at or after from and
// less than max bytes after it (a name of at most max-1 bytes), or -1.
func indexNUL(b []byte, from, max int) int {
	for i := from; i < len(b) && i-from < max; i++ {
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
