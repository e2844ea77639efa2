package toolchain

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// osHost is the machine itself.
type osHost struct{}

func (osHost) Lstat(p string) (fs.FileInfo, error)     { return os.Lstat(p) }
func (osHost) Stat(p string) (fs.FileInfo, error)      { return os.Stat(p) }
func (osHost) Readlink(p string) (string, error)       { return os.Readlink(p) }
func (osHost) ReadDir(p string) ([]fs.DirEntry, error) { return os.ReadDir(p) }

// BenchmarkMake plans the toolchains of this machine's PATH, as each start
// of the launcher does (toolchains auto). Compare revisions with
// benchstat.
func BenchmarkMake(b *testing.B) {
	home, _ := os.UserHomeDir()
	in := Input{
		Home: filepath.Clean(home),
		Dirs: filepath.SplitList(os.Getenv("PATH")),
		Visible: func(p string) bool {
			for _, d := range []string{"/usr/bin", "/usr/sbin", "/usr/lib", "/usr/share", "/bin", "/sbin"} {
				if p == d || strings.HasPrefix(p, d+"/") {
					return true
				}
			}
			return false
		},
	}
	b.ReportAllocs()
	for range b.N {
		Make(osHost{}, in)
	}
}
