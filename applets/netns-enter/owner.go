package netnsenter

import (
	"errors"
	"fmt"
)

// fileInfo is what the trust checks need from fstat.
type fileInfo struct {
	Mode uint32 // st_mode, type and permission bits
	Uid  uint32
	Gid  uint32
	Size int64
}

const (
	sIFMT  = 0o170000
	sIFDIR = 0o040000
	sIFREG = 0o100000
	sIFLNK = 0o120000
)

// checkDir returns why a directory on a privileged path cannot be trusted,
// or nil: it must be a real directory (not a symlink), owned by root, and
// writable by nobody else. A root-owned, world-writable sticky directory such
// as /tmp is refused too: below it, entries are safe from other users only
// if each is root-owned, which holds for the whole path we walk, but no
// sensible configuration lives there, so one simple rule is easier to audit.
func checkDir(path string, fi fileInfo) error {
	switch {
	case fi.Mode&sIFMT == sIFLNK:
		return fmt.Errorf("directory %s is a symlink: use a path without symlinks", path)
	case fi.Mode&sIFMT != sIFDIR:
		return fmt.Errorf("%s is not a directory", path)
	case fi.Uid != 0:
		return fmt.Errorf("directory %s is owned by uid %d, not root: chown root:root %s", path, fi.Uid, path)
	case fi.Mode&0o020 != 0:
		return fmt.Errorf("directory %s is writable by group %d: chmod g-w %s", path, fi.Gid, path)
	case fi.Mode&0o002 != 0:
		return fmt.Errorf("directory %s is writable by others: chmod o-w %s", path, path)
	}
	return nil
}

// checkFile returns why a configuration file read with privilege cannot be
// trusted, or nil: a regular file owned by root, writable by group only if
// that group is root's, never by others, at most max bytes. The message does
// not start with path: the caller prefixes it ("whitelist PATH: ...").
func checkFile(path string, fi fileInfo, max int64) error {
	switch {
	case fi.Mode&sIFMT == sIFLNK:
		return errors.New("is a symlink: replace it with a regular file")
	case fi.Mode&sIFMT != sIFREG:
		return errors.New("is not a regular file")
	case fi.Uid != 0:
		return fmt.Errorf("is owned by uid %d, not root: chown root:root %s", fi.Uid, path)
	case fi.Mode&0o020 != 0 && fi.Gid != 0:
		return fmt.Errorf("is writable by group %d: chmod g-w %s", fi.Gid, path)
	case fi.Mode&0o002 != 0:
		return fmt.Errorf("is writable by others: chmod o-w %s", path)
	case fi.Size > max:
		return fmt.Errorf("is larger than %d bytes", max)
	}
	return nil
}
