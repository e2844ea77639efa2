package testutil

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
)

// PublicKey returns e's public key, ASCII-armoured, and its fingerprint in
// upper-case hex, as a release's signing key is pinned.
func PublicKey(t testing.TB, e *openpgp.Entity) (armored []byte, fingerprint string) {
	t.Helper()
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Serialize(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), strings.ToUpper(hex.EncodeToString(e.PrimaryKey.Fingerprint))
}

// ELF writes a minimal 64-bit little-endian ELF file with one
// PT_INTERP program header naming interp ("" for none), as musl
// detection reads it, and returns its path.
func ELF(t testing.TB, interp string) string {
	t.Helper()
	const ehsize, phsize = 64, 56
	var b []byte
	le := binary.LittleEndian
	hdr := make([]byte, ehsize)
	copy(hdr, "\x7fELF")
	hdr[4], hdr[5], hdr[6] = 2, 1, 1 // 64-bit, little-endian, version 1
	le.PutUint16(hdr[16:], 3)        // ET_DYN
	le.PutUint16(hdr[18:], 62)       // EM_X86_64
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

// RootOwnedDir returns a fresh directory, removed after the test, that a
// claude-update running as the current user accepts as its bin dir's
// parent: as root, one that root owns and only root can write, up to /
// (t.TempDir lies under the world-writable /tmp); otherwise t.TempDir().
// As root it is made under /var/cache/claude-sandbox-tests (or
// $CLAUDE_SBX_AGENT_CACHE), the tests' own cache.
func RootOwnedDir(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		return t.TempDir()
	}
	base := os.Getenv("CLAUDE_SBX_AGENT_CACHE")
	if base == "" {
		base = "/var/cache/claude-sandbox-tests"
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		Missing(t, "root-owned test dir: %v", err)
	}
	for p := filepath.Clean(base); ; p = filepath.Dir(p) {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != 0 || fi.Mode().Perm()&0o022 != 0 || fi.Mode()&os.ModeSymlink != 0 {
			Missing(t, "%s is not a root-owned directory only root can write (%v, uid %d): set CLAUDE_SBX_AGENT_CACHE", p, fi.Mode(), st.Uid)
		}
		if p == "/" {
			break
		}
	}
	dir, err := os.MkdirTemp(base, "bindir.")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
