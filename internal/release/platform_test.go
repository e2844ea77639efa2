package release

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// writeELF writes a minimal 64-bit little-endian ELF file with one
// PT_INTERP program header naming interp ("" for none).
func writeELF(t *testing.T, interp string) string {
	t.Helper()
	const ehsize, phsize = 64, 56
	var b []byte
	le := binary.LittleEndian
	hdr := make([]byte, ehsize)
	copy(hdr, "\x7fELF")
	hdr[4], hdr[5], hdr[6] = 2, 1, 1 // 64-bit, little-endian, version 1
	le.PutUint16(hdr[16:], 3)         // ET_DYN
	le.PutUint16(hdr[18:], 62)        // EM_X86_64
	le.PutUint32(hdr[20:], 1)
	phnum := 0
	if interp != "" {
		phnum = 1
		le.PutUint64(hdr[32:], ehsize) // phoff
	}
	le.PutUint16(hdr[52:], ehsize)
	le.PutUint16(hdr[54:], phsize)
	le.PutUint16(hdr[56:], uint16(phnum))
	le.PutUint16(hdr[58:], 64) // shentsize
	b = append(b, hdr...)
	if interp != "" {
		ph := make([]byte, phsize)
		s := append([]byte(interp), 0)
		le.PutUint32(ph[0:], 3) // PT_INTERP
		le.PutUint32(ph[4:], 4) // PF_R
		le.PutUint64(ph[8:], ehsize+phsize)
		le.PutUint64(ph[32:], uint64(len(s)))
		le.PutUint64(ph[40:], uint64(len(s)))
		le.PutUint64(ph[48:], 1)
		b = append(b, ph...)
		b = append(b, s...)
	}
	p := filepath.Join(t.TempDir(), "sh")
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPlatform(t *testing.T) {
	glibc := writeELF(t, "/lib64/ld-linux-x86-64.so.2")
	musl := writeELF(t, "/lib/ld-musl-x86_64.so.1")
	muslArm := writeELF(t, "/lib/ld-musl-aarch64.so.1")
	static := writeELF(t, "")
	notELF := filepath.Join(t.TempDir(), "script")
	os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755)
	tests := []struct {
		name, arch, sh, want, err string
	}{
		{name: "glibc x64", arch: "amd64", sh: glibc, want: "linux-x64"},
		{name: "musl x64", arch: "amd64", sh: musl, want: "linux-x64-musl"},
		{name: "musl arm64", arch: "arm64", sh: muslArm, want: "linux-arm64-musl"},
		{name: "glibc arm64", arch: "arm64", sh: glibc, want: "linux-arm64"},
		{name: "static sh", arch: "amd64", sh: static, want: "linux-x64"},
		{name: "unsupported arch", arch: "riscv64", sh: glibc, err: "no agent builds for architecture riscv64"},
		{name: "not ELF", arch: "amd64", sh: notELF, err: "detect libc from " + notELF + ": EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Platform(tt.arch, tt.sh)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("Platform(%s, %s) = %q, %v; want error %q", tt.arch, tt.sh, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Platform(%s, %s) = %q, %v; want %q", tt.arch, tt.sh, got, err, tt.want)
			}
		})
	}
}

func TestHostPlatform(t *testing.T) {
	// This Debian host is glibc.
	musl, err := IsMusl("/bin/sh")
	if err != nil || musl {
		t.Fatalf("IsMusl(/bin/sh) = %v, %v on a glibc host", musl, err)
	}
}
