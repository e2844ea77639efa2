package release

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

func TestPlatform(t *testing.T) {
	glibc := testutil.ELF(t, "/lib64/ld-linux-x86-64.so.2")
	musl := testutil.ELF(t, "/lib/ld-musl-x86_64.so.1")
	muslArm := testutil.ELF(t, "/lib/ld-musl-aarch64.so.1")
	static := testutil.ELF(t, "")
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
		{name: "not ELF", arch: "amd64", sh: notELF, err: "detect libc from " + notELF + ": not an ELF file"},
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

// TestELFInterpMatchesDebugELF compares the small reader with debug/elf on
// the host's programs and libraries, and on a big-endian ELF32 file.
func TestELFInterpMatchesDebugELF(t *testing.T) {
	var files []string
	for _, g := range []string{"/usr/bin/*", "/usr/lib/x86_64-linux-gnu/*.so*", "/usr/lib/*/ld-*"} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	checked := 0
	for _, p := range files {
		want, ok := debugELFInterp(p)
		if !ok {
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		got, err := elfInterp(f)
		f.Close()
		if err != nil || got != want {
			t.Errorf("elfInterp(%s) = %q, %v; debug/elf says %q", p, got, err, want)
		}
		checked++
	}
	if checked < 50 {
		t.Fatalf("only %d ELF files checked on this host", checked)
	}

	// ELF32, big-endian, PT_LOAD then PT_INTERP.
	be := binary.BigEndian
	b := make([]byte, 52+2*32)
	copy(b, "\x7fELF")
	b[4], b[5], b[6] = 1, 2, 1
	be.PutUint16(b[16:], 2) // ET_EXEC
	be.PutUint16(b[18:], 8) // EM_MIPS
	be.PutUint32(b[20:], 1)
	be.PutUint32(b[28:], 52) // e_phoff
	be.PutUint16(b[40:], 52) // e_ehsize
	be.PutUint16(b[42:], 32) // e_phentsize
	be.PutUint16(b[44:], 2)  // e_phnum
	be.PutUint32(b[52:], 1)  // PT_LOAD
	interp := "/lib/ld-musl-mips.so.1\x00"
	ph := b[52+32:]
	be.PutUint32(ph[0:], 3) // PT_INTERP
	be.PutUint32(ph[4:], uint32(len(b)))
	be.PutUint32(ph[16:], uint32(len(interp)))
	be.PutUint32(ph[20:], uint32(len(interp)))
	b = append(b, interp...)
	p := filepath.Join(t.TempDir(), "sh32")
	os.WriteFile(p, b, 0o755)
	want, ok := debugELFInterp(p)
	got, err := elfInterp(bytes.NewReader(b))
	if !ok || err != nil || got != want || got != "/lib/ld-musl-mips.so.1" {
		t.Errorf("ELF32 big-endian: elfInterp = %q, %v; debug/elf says %q (%v)", got, err, want, ok)
	}
	for _, bad := range []struct {
		name string
		b    []byte
		err  string
	}{
		{"truncated header", b[:40], "short ELF header: EOF"},
		{"program headers past the end", b[:60], "read ELF program header 0: EOF"},
		{"interpreter past the end", b[:len(b)-4], "read ELF interpreter: EOF"},
	} {
		if got, err := elfInterp(bytes.NewReader(bad.b)); err == nil || err.Error() != bad.err {
			t.Errorf("%s: elfInterp = %q, %v; want error %q", bad.name, got, err, bad.err)
		}
	}
}

// debugELFInterp is the reference: the PT_INTERP contents by debug/elf.
func debugELFInterp(path string) (string, bool) {
	f, err := elf.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			buf := make([]byte, p.Filesz)
			if _, err := p.ReadAt(buf, 0); err != nil {
				return "", false
			}
			return strings.TrimRight(string(buf), "\x00"), true
		}
	}
	return "", true
}

// FuzzELFInterp: on any bytes elfInterp must not panic, and what it returns
// is at most 4096 bytes read from the input. (debug/elf is the reference in
// TestELFInterpMatchesDebugELF; it can take very long on hostile headers,
// so it is not used here.)
func FuzzELFInterp(f *testing.F) {
	for _, interp := range []string{"", "/lib64/ld-linux-x86-64.so.2", "/lib/ld-musl-aarch64.so.1"} {
		b, err := os.ReadFile(testutil.ELF(f, interp))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("\x7fELF\x01\x02\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := elfInterp(bytes.NewReader(b))
		if err != nil {
			return
		}
		if len(got) > 4096 || !bytes.Contains(b, []byte(got)) {
			t.Fatalf("elfInterp = %q, not a string of the input", got)
		}
	})
}
