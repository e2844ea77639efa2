package claudeupdate

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"runtime"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
)

func hashHex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func cliCode(err error) int { return multicall.Code(err) }

func itoa(n int) string { return strconv.Itoa(n) }

func snapshotDiff(a, b map[string]string) string { return cmp.Diff(a, b) }

// illegalInstruction returns a static ELF program for this machine whose
// first instruction is an illegal one (ud2 on x86-64, udf #0 on arm64).
func illegalInstruction(t testing.TB) []byte {
	var machine uint16
	var code []byte
	switch runtime.GOARCH {
	case "amd64":
		machine, code = 62, []byte{0x0f, 0x0b}
	case "arm64":
		machine, code = 183, []byte{0, 0, 0, 0}
	default:
		t.Skipf("no illegal instruction known for %s", runtime.GOARCH)
	}
	const base, hdr = 0x400000, 64 + 56
	le := binary.LittleEndian
	b := make([]byte, hdr, hdr+len(code))
	copy(b, "\x7fELF\x02\x01\x01")
	le.PutUint16(b[16:], 2) // ET_EXEC
	le.PutUint16(b[18:], machine)
	le.PutUint32(b[20:], 1)
	le.PutUint64(b[24:], base+hdr) // entry
	le.PutUint64(b[32:], 64)       // phoff
	le.PutUint16(b[52:], 64)       // ehsize
	le.PutUint16(b[54:], 56)       // phentsize
	le.PutUint16(b[56:], 1)        // phnum
	ph := b[64:]
	le.PutUint32(ph[0:], 1) // PT_LOAD
	le.PutUint32(ph[4:], 5) // R+X
	le.PutUint64(ph[16:], base)
	le.PutUint64(ph[24:], base)
	le.PutUint64(ph[32:], uint64(hdr+len(code)))
	le.PutUint64(ph[40:], uint64(hdr+len(code)))
	le.PutUint64(ph[48:], 0x1000)
	return append(b, code...)
}
