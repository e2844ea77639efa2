package release

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Platform returns the release platform for a Go architecture:
// linux-x64 or linux-arm64, with -musl appended on musl hosts. A host is musl
// when the ELF interpreter of sh (normally /bin/sh) is ld-musl-*: that is
// what actually runs programs, unlike musl files that may merely be present.
func Platform(goarch, sh string) (string, error) {
	var p string
	switch goarch {
	case "amd64":
		p = "linux-x64"
	case "arm64":
		p = "linux-arm64"
	default:
		return "", fmt.Errorf("no agent builds for architecture %s", goarch)
	}
	musl, err := IsMusl(sh)
	if err != nil {
		return "", err
	}
	if musl {
		p += "-musl"
	}
	return p, nil
}

// IsMusl reports whether the ELF interpreter of the program at path is
// musl's dynamic loader. A static program has none and counts as not musl.
func IsMusl(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("detect libc from %s: %w", path, err)
	}
	defer f.Close()
	interp, err := elfInterp(f)
	if err != nil {
		return false, fmt.Errorf("detect libc from %s: %w", path, err)
	}
	return strings.HasPrefix(filepath.Base(interp), "ld-musl-"), nil
}

// elfInterp returns the PT_INTERP path of an ELF file, or "" when it has
// none. It reads the header and program headers itself rather than using
// debug/elf, whose package initialisation (DWARF, zstd, zlib) would run
// in every applet of the multicall binary.
func elfInterp(r io.ReaderAt) (string, error) {
	var hdr [64]byte // the ELF64 header; ELF32's is 52 bytes
	n, err := r.ReadAt(hdr[:], 0)
	if n < 16 || !bytes.HasPrefix(hdr[:], []byte("\x7fELF")) {
		return "", errors.New("not an ELF file")
	}
	var bo binary.ByteOrder
	switch hdr[5] {
	case 1:
		bo = binary.LittleEndian
	case 2:
		bo = binary.BigEndian
	default:
		return "", fmt.Errorf("unknown ELF data encoding %d", hdr[5])
	}
	elf32 := hdr[4] == 1
	var phoff uint64
	var phentsize, phnum, minEnt uint16
	switch {
	case elf32 && n >= 52:
		phoff = uint64(bo.Uint32(hdr[28:]))
		phentsize, phnum, minEnt = bo.Uint16(hdr[42:]), bo.Uint16(hdr[44:]), 32
	case hdr[4] == 2 && n == 64:
		phoff = bo.Uint64(hdr[32:])
		phentsize, phnum, minEnt = bo.Uint16(hdr[54:]), bo.Uint16(hdr[56:]), 56
	case hdr[4] != 1 && hdr[4] != 2:
		return "", fmt.Errorf("unknown ELF class %d", hdr[4])
	default:
		return "", fmt.Errorf("short ELF header: %w", err)
	}
	if phnum > 0 && phentsize < minEnt {
		return "", fmt.Errorf("bad ELF program header size %d", phentsize)
	}
	ph := make([]byte, phentsize)
	for i := range uint64(phnum) {
		if _, err := r.ReadAt(ph, int64(phoff+i*uint64(phentsize))); err != nil {
			return "", fmt.Errorf("read ELF program header %d: %w", i, err)
		}
		const ptInterp = 3
		if bo.Uint32(ph) != ptInterp {
			continue
		}
		var off, size uint64 // p_offset, p_filesz
		if elf32 {
			off, size = uint64(bo.Uint32(ph[4:])), uint64(bo.Uint32(ph[16:]))
		} else {
			off, size = bo.Uint64(ph[8:]), bo.Uint64(ph[32:])
		}
		if size > 4096 {
			return "", errors.New("interpreter path too long")
		}
		buf := make([]byte, size)
		if _, err := r.ReadAt(buf, int64(off)); err != nil {
			return "", fmt.Errorf("read ELF interpreter: %w", err)
		}
		return strings.TrimRight(string(buf), "\x00"), nil
	}
	return "", nil
}
