//go:build unix

package sandbox

import (
	"io/fs"
	"syscall"
)

func statLinkCount(fi fs.FileInfo) (nlink, dev uint64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return uint64(st.Nlink), uint64(st.Dev), true
}

func fileOwner(fi fs.FileInfo) (uid int, ok bool) {
	if o, ok := fi.Sys().(interface{ Owner() int }); ok {
		return o.Owner(), true
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
