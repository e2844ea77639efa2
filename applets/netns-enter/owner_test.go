package netnsenter

import (
	"encoding/binary"
	"strings"
	"testing"
)

// acl builds a system.posix_acl_access value from tag, perm, id triples.
func acl(entries ...uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, aclVersion)
	for i := 0; i+2 < len(entries); i += 3 {
		b = binary.LittleEndian.AppendUint16(b, uint16(entries[i]))
		b = binary.LittleEndian.AppendUint16(b, uint16(entries[i+1]))
		b = binary.LittleEndian.AppendUint32(b, entries[i+2])
	}
	return b
}

const none = 0xffffffff // the id of entries without one

// What setfacl -m u:1001:rw writes on a 0644 file (mask rw, so mode 0664),
// and variants.
var (
	aclUserRW    = acl(aclUserObj, 6, none, aclUser, 6, 1001, aclGroupObj, 4, none, aclMask, 6, none, aclOther, 4, none)
	aclUserR     = acl(aclUserObj, 6, none, aclUser, 4, 1001, aclGroupObj, 4, none, aclMask, 4, none, aclOther, 4, none)
	aclGroupW    = acl(aclUserObj, 7, none, aclGroupObj, 5, none, aclGroup, 7, 27, aclMask, 5, none, aclOther, 5, none)
	aclGroupObjW = acl(aclUserObj, 6, none, aclGroupObj, 6, none, aclMask, 4, none, aclOther, 4, none)
)

func TestCheckDir(t *testing.T) {
	tests := []struct {
		name string
		fi   fileInfo
		want string
	}{
		{"root 0755", fileInfo{Mode: sIFDIR | 0o755}, ""},
		{"root group 0 0755", fileInfo{Mode: sIFDIR | 0o755, Gid: 0}, ""},
		{"symlink", fileInfo{Mode: sIFLNK | 0o777}, "directory /d is a symlink: use a path without symlinks"},
		{"file", fileInfo{Mode: sIFREG | 0o755}, "/d is not a directory"},
		{"user-owned", fileInfo{Mode: sIFDIR | 0o755, Uid: 1000}, "directory /d is owned by uid 1000, not root: chown root:root /d"},
		{"group-writable", fileInfo{Mode: sIFDIR | 0o775, Gid: 50}, "directory /d is writable by group 50: chmod g-w /d"},
		{"group-writable gid 0", fileInfo{Mode: sIFDIR | 0o775}, "directory /d is writable by group 0: chmod g-w /d"},
		{"world-writable", fileInfo{Mode: sIFDIR | 0o757}, "directory /d is writable by others: chmod o-w /d"},
		{"sticky tmp", fileInfo{Mode: sIFDIR | 0o1777}, "directory /d is writable by group 0: chmod g-w /d"},
		{"sticky o+w", fileInfo{Mode: sIFDIR | 0o1757}, "directory /d is writable by others: chmod o-w /d"},
		{"acl user rw", fileInfo{Mode: sIFDIR | 0o775, ACL: aclUserRW}, "directory /d has an ACL entry granting write to uid 1001: setfacl -b /d"},
		{"acl user r", fileInfo{Mode: sIFDIR | 0o755, ACL: aclUserR}, ""},
		{"acl group w masked", fileInfo{Mode: sIFDIR | 0o755, ACL: aclGroupW}, "directory /d has an ACL entry granting write to gid 27: setfacl -b /d"},
		{"acl truncated", fileInfo{Mode: sIFDIR | 0o755, ACL: aclUserR[:9]}, "directory /d has a POSIX ACL that cannot be read: setfacl -b /d"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkDir("/d", tt.fi)
			if got := errString(err); got != tt.want {
				t.Errorf("checkDir(/d, %+v) = %q, want %q", tt.fi, got, tt.want)
			}
		})
	}
}

func TestCheckFile(t *testing.T) {
	tests := []struct {
		name string
		fi   fileInfo
		want string
	}{
		{"root 0644", fileInfo{Mode: sIFREG | 0o644, Size: 7}, ""},
		{"root 0664 group 0", fileInfo{Mode: sIFREG | 0o664}, "is writable by group 0: chmod g-w /f"},
		{"acl user rw", fileInfo{Mode: sIFREG | 0o664, ACL: aclUserRW}, "has an ACL entry granting write to uid 1001: setfacl -b /f"},
		{"acl user r", fileInfo{Mode: sIFREG | 0o644, ACL: aclUserR}, ""},
		{"acl group w masked", fileInfo{Mode: sIFREG | 0o755, ACL: aclGroupW}, "has an ACL entry granting write to gid 27: setfacl -b /f"},
		{"acl owning group w masked", fileInfo{Mode: sIFREG | 0o644, Gid: 5, ACL: aclGroupObjW}, "has an ACL entry granting write to its group 5: setfacl -b /f"},
		{"acl empty", fileInfo{Mode: sIFREG | 0o644, ACL: []byte{}}, "has a POSIX ACL that cannot be read: setfacl -b /f"},
		{"acl version 1", fileInfo{Mode: sIFREG | 0o644, ACL: append([]byte{1, 0, 0, 0}, aclUserR[4:]...)}, "has a POSIX ACL that cannot be read: setfacl -b /f"},
		{"acl unknown tag", fileInfo{Mode: sIFREG | 0o644, ACL: acl(0x40, 0, 0)}, "has a POSIX ACL that cannot be read: setfacl -b /f"},
		{"max size", fileInfo{Mode: sIFREG | 0o644, Size: 100}, ""},
		{"symlink", fileInfo{Mode: sIFLNK | 0o777}, "is a symlink: replace it with a regular file"},
		{"fifo", fileInfo{Mode: 0o010000 | 0o644}, "is not a regular file"},
		{"dir", fileInfo{Mode: sIFDIR | 0o755}, "is not a regular file"},
		{"user-owned", fileInfo{Mode: sIFREG | 0o644, Uid: 1001, Gid: 1001}, "is owned by uid 1001, not root: chown root:root /f"},
		{"group-writable", fileInfo{Mode: sIFREG | 0o664, Gid: 1001}, "is writable by group 1001: chmod g-w /f"},
		{"world-writable", fileInfo{Mode: sIFREG | 0o646}, "is writable by others: chmod o-w /f"},
		{"huge", fileInfo{Mode: sIFREG | 0o644, Size: 101}, "is larger than 100 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkFile("/f", tt.fi, 100)
			if got := errString(err); got != tt.want {
				t.Errorf("checkFile(/f, %+v) = %q, want %q", tt.fi, got, tt.want)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// FuzzCheckACL: any ACL value gives nil or a one-line refusal, and nil only
// when no named or owning-group entry has the write bit.
func FuzzCheckACL(f *testing.F) {
	for _, a := range [][]byte{aclUserRW, aclUserR, aclGroupW, aclGroupObjW, {}, {2, 0, 0, 0}} {
		f.Add(a)
	}
	f.Fuzz(func(t *testing.T, a []byte) {
		err := checkACL(fileInfo{ACL: a})
		if err != nil {
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("checkACL(%x) error is not one line: %q", a, err)
			}
			return
		}
		if a == nil {
			return
		}
		for e := a[4:]; len(e) >= 8; e = e[8:] {
			tag, perm := binary.LittleEndian.Uint16(e), binary.LittleEndian.Uint16(e[2:])
			if tag&(aclUser|aclGroup|aclGroupObj) != 0 && perm&aclWrite != 0 {
				t.Fatalf("checkACL(%x) accepted an entry granting write", a)
			}
		}
	})
}
