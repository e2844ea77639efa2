package netnsenter

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

const module = "github.com/claude-sandbox/claude-sandbox"

// privilegedPackages are the only non-standard packages the setuid build
// (-tags netnsenter_only) may link.
var privilegedPackages = map[string]bool{
	module + "/cmd/multicall":       true,
	module + "/internal/multicall":  true,
	module + "/internal/buildinfo":  true,
	module + "/internal/nsname":     true,
	module + "/internal/quote":      true,
	module + "/applets/netns-enter": true,
	"golang.org/x/sys/unix":         true,
}

// deniedStd are standard packages that have no business in the setuid
// binary: log and log/slog format local time (TZ is opened as root), the
// others read files or the environment when used.
var deniedStd = map[string]bool{
	"net": true, "net/http": true, "os/user": true, "plugin": true,
	"log": true, "log/slog": true, "crypto/tls": true, "time/tzdata": true,
}

// allowedInitCalls are the calls package-level variables of the privileged
// packages may make before main: all build values in memory only.
var allowedInitCalls = map[string]bool{
	"errors.New":         true, // a value
	"fmt.Errorf":         true, // a value, from constant arguments
	"multicall.NewTable": true, // cmd/multicall: builds a map, panics on a duplicate
	"make":               true,
	"new":                true,
}

type listedPackage struct {
	ImportPath string
	Standard   bool
	Dir        string
	GoFiles    []string
}

func listPrivileged(t *testing.T) []listedPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-tags", "netnsenter_only",
		"-f", "{{.ImportPath}}\t{{.Standard}}\t{{.Dir}}\t{{join .GoFiles \" \"}}", "./cmd/multicall")
	cmd.Dir = testutil.ModuleRoot(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.Bytes())
	}
	var pkgs []listedPackage
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 4 {
			t.Fatalf("go list line %q", sc.Text())
		}
		pkgs = append(pkgs, listedPackage{ImportPath: f[0], Standard: f[1] == "true", Dir: f[2], GoFiles: strings.Fields(f[3])})
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list -deps found only %d packages", len(pkgs))
	}
	return pkgs
}

// TestPrivilegedDeps: the setuid build links the standard library,
// x/sys/unix and our stdlib-only packages, nothing else.
func TestPrivilegedDeps(t *testing.T) {
	var ours []string
	for _, p := range listPrivileged(t) {
		switch {
		case p.Standard && deniedStd[p.ImportPath]:
			t.Errorf("setuid build links standard package %s", p.ImportPath)
		case p.Standard:
		case privilegedPackages[p.ImportPath]:
			ours = append(ours, p.ImportPath)
		default:
			t.Errorf("setuid build links %s: only the standard library, golang.org/x/sys/unix and %d packages of ours may be", p.ImportPath, len(privilegedPackages)-1)
		}
	}
	if len(ours) != len(privilegedPackages) {
		t.Errorf("setuid build links %d of the expected non-standard packages (%q); the build tag may be broken", len(ours), ours)
	}
	t.Logf("non-standard packages of the setuid build: %q", ours)
}

// TestPrivilegedNoInit: no non-standard package of the setuid build has an
// init function, and their package-level variables call nothing but
// allowedInitCalls, so nothing of ours runs before main.
func TestPrivilegedNoInit(t *testing.T) {
	fset := token.NewFileSet()
	checked := 0
	for _, p := range listPrivileged(t) {
		if p.Standard {
			continue
		}
		for _, name := range p.GoFiles {
			path := filepath.Join(p.Dir, name)
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if d.Recv == nil && d.Name.Name == "init" {
						t.Errorf("%s: func init in a package of the setuid build", fset.Position(d.Pos()))
					}
				case *ast.GenDecl:
					if d.Tok != token.VAR {
						continue
					}
					ast.Inspect(d, func(n ast.Node) bool {
						switch n := n.(type) {
						case *ast.FuncLit:
							return false // runs only when called
						case *ast.CallExpr:
							fun := types.ExprString(n.Fun)
							if !allowedInitCalls[fun] && !isConversion(n.Fun) {
								t.Errorf("%s: package-level variable calls %s before main", fset.Position(n.Pos()), fun)
							}
						}
						return true
					})
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked only %d files", checked)
	}
}

// isConversion recognises conversions to builtin types, which look like
// calls in the syntax tree.
func isConversion(fun ast.Expr) bool {
	id, ok := fun.(*ast.Ident)
	if !ok {
		return false
	}
	switch id.Name {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64",
		"uintptr", "byte", "rune", "string", "float32", "float64", "bool":
		return true
	}
	return false
}

// TestDevelopmentTable: the package table that opens docs/development.md
// says "yes" in its setuid column for exactly the packages of ours that the
// setuid build may link (privilegedPackages), and has one row for every
// package with code, and no other.
func TestDevelopmentTable(t *testing.T) {
	root := testutil.ModuleRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "development.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([^`]+)` \\|.*\\| (yes|no) \\|$")
	rows := map[string]string{}
	for _, l := range strings.Split(string(doc), "\n") {
		if m := row.FindStringSubmatch(l); m != nil {
			if _, dup := rows[m[1]]; dup {
				t.Errorf("docs/development.md: two rows for %s", m[1])
			}
			rows[m[1]] = m[2]
		}
	}
	for p := range privilegedPackages {
		if rel, ours := strings.CutPrefix(p, module+"/"); ours && rows[rel] != "yes" {
			t.Errorf("docs/development.md: %s is linked into the setuid build, but its row says %q", rel, rows[rel])
		}
	}
	cmd := exec.Command("go", "list", "-f", "{{if .GoFiles}}{{.ImportPath}}{{end}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	have := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(p, module+"/")
		have[rel] = true
		if _, ok := rows[rel]; !ok {
			t.Errorf("docs/development.md: no row for package %s: add one (what it owns, who imports it, setuid build yes or no)", rel)
		}
	}
	for rel, setuid := range rows {
		if !have[rel] {
			t.Errorf("docs/development.md: a row for %s, which is no package with code", rel)
		}
		if setuid == "yes" && !privilegedPackages[module+"/"+rel] {
			t.Errorf("docs/development.md: %s says yes in the setuid column, but deps_test does not allow it there", rel)
		}
	}
	if len(rows) < 20 {
		t.Errorf("docs/development.md: only %d package rows found: fix the table or this test", len(rows))
	}
}
