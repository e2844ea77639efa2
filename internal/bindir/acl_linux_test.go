package bindir

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// acl encodes POSIX ACL entries (tag, perm, id) as the kernel stores them.
func acl(entries ...[3]uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, aclVersion)
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, uint16(e[0]))
		b = binary.LittleEndian.AppendUint16(b, uint16(e[1]))
		b = binary.LittleEndian.AppendUint32(b, e[2])
	}
	return b
}

// TestCheckTrustedACL: an ACL entry that grants write counts even when
// the mask hides it today (one chmod g+w would let it through), and so does
// a default ACL, which new files in the directory (the binaries) inherit.
func TestCheckTrustedACL(t *testing.T) {
	testutil.RequireRoot(t)
	const rwx, rx = 7, 5
	tests := []struct {
		name, attr string
		value      []byte
		problem    string
	}{
		{"masked user entry", "system.posix_acl_access",
			acl([3]uint32{aclUserObj, rwx, 0}, [3]uint32{aclUser, rwx, 1234}, [3]uint32{aclGroupObj, rx, 0}, [3]uint32{aclMask, rx, 0}, [3]uint32{aclOther, rx, 0}),
			"has an ACL entry granting write to uid 1234 (masked today; chmod g+w would grant it): setfacl -b @D"},
		{"default ACL", "system.posix_acl_default",
			acl([3]uint32{aclUserObj, rwx, 0}, [3]uint32{aclGroupObj, rx, 0}, [3]uint32{aclGroup, rwx, 1234}, [3]uint32{aclMask, rwx, 0}, [3]uint32{aclOther, rx, 0}),
			"has a default ACL entry granting write to gid 1234, which new files inherit: setfacl -k @D"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(testutil.RootOwnedDir(t), "bin")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := unix.Setxattr(dir, tt.attr, tt.value, 0); err != nil {
				if errors.Is(err, syscall.ENOTSUP) {
					testutil.Missing(t, "no POSIX ACLs on %s: %v", dir, err)
				}
				t.Fatalf("setxattr %s: %v", tt.attr, err)
			}
			fi, _ := os.Stat(dir)
			if fi.Mode().Perm() != 0o755 {
				t.Fatalf("mode %v, want 0755 (the entry masked)", fi.Mode())
			}
			err := CheckTrusted(dir)
			want := "bin dir " + dir + " is unsafe for root: " + dir + " " + replaceD(tt.problem, dir)
			if err == nil || err.Error() != want {
				t.Errorf("CheckTrusted() = %v, want %q", err, want)
			}
		})
	}
}

func replaceD(s, d string) string {
	out := ""
	for i := 0; i < len(s); i++ {
		if i+1 < len(s) && s[i] == '@' && s[i+1] == 'D' {
			out += d
			i++
			continue
		}
		out += string(s[i])
	}
	return out
}
