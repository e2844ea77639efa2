// Package sysnum reads the syscall numbers of golang.org/x/sys/unix
// (zsysnum_linux_ARCH.go, generated there from the kernel's headers) for any
// architecture, whatever the host: the seccomp tables are generated from it
// and tested against it.
package sysnum

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Entry is one syscall.
type Entry struct {
	Name string
	Nr   uint32
}

// notSyscalls are SYS_ constants that name no syscall.
var notSyscalls = map[string]bool{
	"arch_specific_syscall": true, // arm64: base of the arch-private range
}

// Parse returns the syscalls of linux/arch from the x/sys/unix source
// tree at dir, sorted by number.
func Parse(dir, arch string) ([]Entry, error) {
	file := filepath.Join(dir, "unix", "zsysnum_linux_"+arch+".go")
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", file, err)
	}
	var tab []Entry
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			for i, id := range v.Names {
				name, ok := strings.CutPrefix(id.Name, "SYS_")
				if !ok || i >= len(v.Values) {
					continue
				}
				lit, ok := v.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.INT {
					return nil, fmt.Errorf("%s: %s is not an integer literal", file, id.Name)
				}
				n, err := strconv.ParseUint(lit.Value, 0, 32)
				if err != nil {
					return nil, fmt.Errorf("%s: %s: %w", file, id.Name, err)
				}
				name = strings.ToLower(name)
				if notSyscalls[name] {
					continue
				}
				tab = append(tab, Entry{name, uint32(n)})
			}
		}
	}
	if len(tab) < 200 {
		return nil, fmt.Errorf("%s: only %d syscalls", file, len(tab))
	}
	slices.SortFunc(tab, func(a, b Entry) int { return int(a.Nr) - int(b.Nr) })
	return tab, nil
}
