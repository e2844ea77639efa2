package release

import (
	"os"
	"path/filepath"
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
