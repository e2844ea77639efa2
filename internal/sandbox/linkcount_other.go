//go:build !unix

package sandbox

import "io/fs"

func statLinkCount(fs.FileInfo) (nlink, dev uint64, ok bool) { return 0, 0, false }
