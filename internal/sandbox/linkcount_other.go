//go:build !unix

package sandbox

import "io/fs"

func statLinkCount(fs.FileInfo) (nlink, dev uint64, ok bool) { return 0, 0, false }

func fileOwner(fi fs.FileInfo) (uid int, ok bool) {
	if o, ok := fi.Sys().(interface{ Owner() int }); ok {
		return o.Owner(), true
	}
	return 0, false
}
