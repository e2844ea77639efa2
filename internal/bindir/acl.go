package bindir

import (
	"encoding/binary"
	"fmt"
)

// POSIX ACL extended attribute format (linux/posix_acl_xattr.h): a
// little-endian version word, then 8-byte entries of tag, permissions, id.
const (
	aclVersion  = 2
	aclUserObj  = 0x01
	aclUser     = 0x02
	aclGroupObj = 0x04
	aclGroup    = 0x08
	aclMask     = 0x10
	aclOther    = 0x20
	aclWrite    = 0x02
)

// aclProblem says why an access ACL (def false) or a default ACL (def true)
// lets someone other than the owner write, or returns "". Every named user
// or group entry and the owning group's entry count, whatever the mask
// says today: one chmod g+w widens the mask. In a default ACL, which new
// files in the directory inherit, the other entry counts too. An ACL that
// does not parse is a problem.
func aclProblem(a []byte, def bool) string {
	if a == nil {
		return ""
	}
	kind := "an ACL entry"
	if def {
		kind = "a default ACL entry"
	}
	if len(a) < 4 || (len(a)-4)%8 != 0 || binary.LittleEndian.Uint32(a) != aclVersion {
		return "has a POSIX ACL that cannot be read"
	}
	var mask uint16 = aclWrite
	for e := a[4:]; len(e) > 0; e = e[8:] {
		if binary.LittleEndian.Uint16(e) == aclMask {
			mask = binary.LittleEndian.Uint16(e[2:])
		}
	}
	for e := a[4:]; len(e) > 0; e = e[8:] {
		tag, perm, id := binary.LittleEndian.Uint16(e), binary.LittleEndian.Uint16(e[2:]), binary.LittleEndian.Uint32(e[4:])
		var who string
		switch tag {
		case aclUserObj, aclMask:
			continue
		case aclOther:
			if !def {
				continue // the mode bits show it
			}
			who = "others"
		case aclUser:
			who = fmt.Sprintf("uid %d", id)
		case aclGroup:
			who = fmt.Sprintf("gid %d", id)
		case aclGroupObj:
			who = "its group"
		default:
			return "has a POSIX ACL that cannot be read"
		}
		if perm&aclWrite == 0 {
			continue
		}
		switch {
		case def:
			return fmt.Sprintf("has %s granting write to %s, which new files inherit", kind, who)
		case mask&aclWrite == 0:
			return fmt.Sprintf("has %s granting write to %s (masked today; chmod g+w would grant it)", kind, who)
		}
		return fmt.Sprintf("has %s granting write to %s", kind, who)
	}
	return ""
}
