package release

import (
	"debug/elf"
	"fmt"
	"path/filepath"
	"strings"
)

// Platform returns the release platform for a Go architecture:
// linux-x64 or linux-arm64, with -musl appended on musl hosts. A host is musl
// when the ELF interpreter of sh (normally /bin/sh) is ld-musl-*: that is
// what actually runs programs, unlike musl files that may merely be present.
func Platform(goarch, sh string) (string, error) {
	var p string
	switch goarch {
	case "amd64":
		p = "linux-x64"
	case "arm64":
		p = "linux-arm64"
	default:
		return "", fmt.Errorf("no agent builds for architecture %s", goarch)
	}
	musl, err := IsMusl(sh)
	if err != nil {
		return "", err
	}
	if musl {
		p += "-musl"
	}
	return p, nil
}

// IsMusl reports whether the ELF interpreter of the program at path is
// musl's dynamic loader. A static program has none and counts as not musl.
func IsMusl(path string) (bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return false, fmt.Errorf("detect libc from %s: %v", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		if p.Filesz > 4096 {
			return false, fmt.Errorf("detect libc from %s: interpreter path too long", path)
		}
		buf := make([]byte, p.Filesz)
		if _, err := p.ReadAt(buf, 0); err != nil {
			return false, fmt.Errorf("detect libc from %s: %v", path, err)
		}
		interp := strings.TrimRight(string(buf), "\x00")
		return strings.HasPrefix(filepath.Base(interp), "ld-musl-"), nil
	}
	return false, nil
}
