package netnsenter

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// fileInfo is what the trust checks need from fstat, and the file's POSIX
// access ACL as the kernel stores it (the system.posix_acl_access extended
// attribute; nil when the file has none).
type fileInfo struct {
	Mode uint32 // st_mode, type and permission bits
	Uid  uint32
	Gid  uint32
	Size int64
	ACL  []byte
}

const (
	sIFMT  = 0o170000
	sIFDIR = 0o040000
	sIFREG = 0o100000
	sIFLNK = 0o120000
)

// checkDir returns why a directory on a privileged path cannot be trusted,
// or nil: it must be a real directory (not a symlink), owned by root, and
// writable by nobody else: not by its group (whichever it is), not by
// others, not through an ACL entry. A root-owned, world-writable sticky
// directory such as /tmp is refused too: below it, entries are safe from
// other users only if each is root-owned, which holds for the whole path we
// walk, but no sensible configuration lives there, so one simple rule is
// easier to audit.
func checkDir(path string, fi fileInfo) error {
	switch {
	case fi.Mode&sIFMT == sIFLNK:
		return fmt.Errorf("directory %s is a symlink: use a path without symlinks", path)
	case fi.Mode&sIFMT != sIFDIR:
		return fmt.Errorf("%s is not a directory", path)
	case fi.Uid != 0:
		return fmt.Errorf("directory %s is owned by uid %d, not root: chown root:root %s", path, fi.Uid, path)
	}
	if err := checkACL(fi); err != nil {
		return fmt.Errorf("directory %s %w: setfacl -b %s", path, err, path)
	}
	switch {
	case fi.Mode&0o020 != 0:
		return fmt.Errorf("directory %s is writable by group %d: chmod g-w %s", path, fi.Gid, path)
	case fi.Mode&0o002 != 0:
		return fmt.Errorf("directory %s is writable by others: chmod o-w %s", path, path)
	}
	return nil
}

// checkFile returns why a configuration file read with privilege cannot be
// trusted, or nil: a regular file owned by root, writable by nobody else (not
// by its group, even root's: any member of gid 0 would be trusted with every
// namespace; not by others; not through an ACL entry), at most max bytes.
// The message does not start with path: the caller prefixes it ("whitelist
// PATH: ...").
func checkFile(path string, fi fileInfo, max int64) error {
	switch {
	case fi.Mode&sIFMT == sIFLNK:
		return errors.New("is a symlink: replace it with a regular file")
	case fi.Mode&sIFMT != sIFREG:
		return errors.New("is not a regular file")
	case fi.Uid != 0:
		return fmt.Errorf("is owned by uid %d, not root: chown root:root %s", fi.Uid, path)
	}
	if err := checkACL(fi); err != nil {
		return fmt.Errorf("%w: setfacl -b %s", err, path)
	}
	switch {
	case fi.Mode&0o020 != 0:
		return fmt.Errorf("is writable by group %d: chmod g-w %s", fi.Gid, path)
	case fi.Mode&0o002 != 0:
		return fmt.Errorf("is writable by others: chmod o-w %s", path)
	case fi.Size > max:
		return fmt.Errorf("is larger than %d bytes", max)
	}
	return nil
}

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

// checkACL returns why fi's access ACL lets someone other than its owner
// write, or nil. With an ACL the mode's group bits are the mask, which the
// mode check reads; this check refuses every named user or group entry and
// the owning group's entry that grant write, whether or not the mask lets
// them through today (one chmod g+w would). An ACL that does not parse is
// refused. The message reads after the path.
func checkACL(fi fileInfo) error {
	if fi.ACL == nil {
		return nil
	}
	a := fi.ACL
	if len(a) < 4 || (len(a)-4)%8 != 0 || binary.LittleEndian.Uint32(a) != aclVersion {
		return errors.New("has a POSIX ACL that cannot be read")
	}
	for e := a[4:]; len(e) > 0; e = e[8:] {
		tag, perm, id := binary.LittleEndian.Uint16(e), binary.LittleEndian.Uint16(e[2:]), binary.LittleEndian.Uint32(e[4:])
		switch tag {
		case aclUserObj, aclMask, aclOther: // the mode bits show these
		case aclUser, aclGroup, aclGroupObj:
			if perm&aclWrite == 0 {
				continue
			}
			who := fmt.Sprintf("uid %d", id)
			if tag == aclGroup {
				who = fmt.Sprintf("gid %d", id)
			} else if tag == aclGroupObj {
				who = fmt.Sprintf("its group %d", fi.Gid)
			}
			return fmt.Errorf("has an ACL entry granting write to %s", who)
		default:
			return errors.New("has a POSIX ACL that cannot be read")
		}
	}
	return nil
}
