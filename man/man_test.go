// Package man holds the manual pages, written in man(7) roff and installed
// by `make install` under $(PREFIX)/share/man. Its tests keep them honest:
// every flag and directive the code accepts is in its page, every
// diagnostic a page quotes is in the code, and every page renders with
// man(1) without a warning.
package man

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// page is a manual page and the code it documents.
type page struct {
	file string
	// sources are the packages whose messages DIAGNOSTICS may quote.
	sources []string
}

var pages = []page{
	{"claude.1", []string{"applets/claude", "internal/bwrap", "internal/sandbox", "internal/sandboxcfg"}},
	{"claude-update.1", []string{"applets/claude-update", "internal/bindir", "internal/release", "internal/npmreg", "internal/download"}},
	{"claude-sandbox-init.5", []string{"internal/sandboxcfg", "internal/sandbox"}},
	{"netns-firewall.conf.5", []string{"internal/netpolicy"}},
	{"netns-enter.8", []string{"applets/netns-enter", "internal/nsname"}},
	{"netns-setup.8", []string{"applets/netns-setup", "internal/netcfg", "internal/netpolicy", "internal/nft", "internal/nsname"}},
	{"netns-dns.8", []string{"applets/netns-dns"}},
	{"claude-sandbox-doctor.8", []string{"applets/doctor", "internal/bwrap", "internal/nsname", "internal/bindir"}},
	{"claude-sandbox-net.1", []string{"applets/net", "internal/netctl", "internal/nsname"}},
	{"claude-sandbox-git.1", []string{"applets/git", "applets/gitremote", "applets/claude"}},
}

func root(t *testing.T) string { return testutil.ModuleRoot(t) }

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// unescape turns roff text into what it prints, for the escapes the pages
// use.
func unescape(s string) string {
	return strings.NewReplacer(`\-`, "-", `\(aq`, "'", `\(dq`, `"`, `\e`, `\`, `\&`, "", `\ `, " ").Replace(s)
}

// macroArgs splits a macro line's arguments as roff does: on blanks, with
// double quotes grouping.
func macroArgs(s string) []string {
	var out []string
	var cur strings.Builder
	in, any := false, false
	for _, r := range s {
		switch {
		case r == '"':
			in, any = !in, true
		case (r == ' ' || r == '\t') && !in:
			if any {
				out = append(out, cur.String())
			}
			cur.Reset()
			any = false
		default:
			cur.WriteRune(r)
			any = true
		}
	}
	if any {
		out = append(out, cur.String())
	}
	return out
}

var fontRun = regexp.MustCompile(`\\f([BIRP])`)

// boldRuns returns the bold text of one line: inline \fB runs, and the
// bold arguments of .B, .BI, .BR, .IB and .RB.
func boldRuns(line string) []string {
	var runs []string
	if strings.HasPrefix(line, ".") {
		name, rest, _ := strings.Cut(line[1:], " ")
		args := macroArgs(rest)
		first := -1
		switch name {
		case "B":
			return append(runs, inlineBold(`\fB`+strings.Join(args, " "))...)
		case "BI", "BR":
			first = 0
		case "IB", "RB":
			first = 1
		default:
			return inlineBold(line)
		}
		for i := first; i < len(args); i += 2 {
			runs = append(runs, inlineBold(`\fB`+args[i])...)
		}
		return runs
	}
	return inlineBold(line)
}

// inlineBold returns the runs of text set in \fB.
func inlineBold(s string) []string {
	var runs []string
	bold := false
	last := 0
	for _, m := range fontRun.FindAllStringSubmatchIndex(s, -1) {
		if bold && m[0] > last {
			runs = append(runs, unescape(s[last:m[0]]))
		}
		bold = s[m[2]:m[3]] == "B"
		last = m[1]
	}
	if bold && last < len(s) {
		runs = append(runs, unescape(s[last:]))
	}
	return runs
}

// boldWords is every word set in bold anywhere in the page.
func boldWords(src string) map[string]bool {
	words := map[string]bool{}
	for _, l := range strings.Split(src, "\n") {
		for _, r := range boldRuns(l) {
			for _, w := range strings.FieldsFunc(r, func(r rune) bool {
				return unicode.IsSpace(r) || strings.ContainsRune(",()[]|;\"", r)
			}) {
				words[strings.TrimRight(w, ".:")] = true
			}
		}
	}
	return words
}

func parseFile(t *testing.T, path string) *ast.File {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root(t), path), nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func unquote(t *testing.T, lit *ast.BasicLit) string {
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var flagLit = regexp.MustCompile(`^--?[a-z][a-z0-9-]*(=[a-z]*)?$`)

// funcFlagLiterals returns the string literals in function fn of file that
// look like options ("-h", "--shell", "--netns="); prefixes that only start
// a family ("--sandbox-", "--sandbox-seccomp=") are not options themselves.
func funcFlagLiterals(t *testing.T, file, fn string) []string {
	var out []string
	for _, d := range parseFile(t, file).Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != fn {
			continue
		}
		ast.Inspect(fd, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s := unquote(t, lit)
			if s == "--" || flagLit.MatchString(s) && !strings.HasSuffix(s, "-") {
				out = append(out, s)
			}
			return true
		})
	}
	if len(out) == 0 {
		t.Fatalf("no options found in %s %s", file, fn)
	}
	return out
}

// kongFlags returns the options of the kong struct type named typ: its
// fields' names (tag name, else the field name in kebab case) as --NAME,
// and -X for short:"X". Positional arguments (arg:"") are not options. A
// hidden option must say why in its name (testonly-NAME) or, if the
// program itself uses it, in its help ("Internal: ...").
func kongFlags(t *testing.T, file, typ string) []string {
	var out []string
	found := false
	ast.Inspect(parseFile(t, file), func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != typ {
			return true
		}
		found = true
		for _, f := range ts.Type.(*ast.StructType).Fields.List {
			tag := reflect.StructTag("")
			if f.Tag != nil {
				tag = reflect.StructTag(unquote(t, f.Tag))
			}
			if _, isArg := tag.Lookup("arg"); isArg {
				continue
			}
			for _, id := range f.Names {
				name := tag.Get("name")
				if name == "" {
					name = kebab(id.Name)
				}
				out = append(out, "--"+name)
				if _, hidden := tag.Lookup("hidden"); hidden && !strings.HasPrefix(name, "testonly-") && !strings.HasPrefix(tag.Get("help"), "Internal: ") {
					t.Errorf("%s: hidden option --%s is named neither testonly-NAME (for tests) nor helped \"Internal: ...\"", file, name)
				}
				if s := tag.Get("short"); s != "" {
					out = append(out, "-"+s)
				}
			}
		}
		return false
	})
	if !found {
		t.Fatalf("no type %s in %s", typ, file)
	}
	return out
}

// kebab is kong's default flag name: AllowUnsigned -> allow-unsigned.
func kebab(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 && !unicode.IsUpper(rune(s[i-1])) {
				b.WriteByte('-')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// caseStrings returns the string case labels of the switches in function
// fn of file ("" for every function).
func caseStrings(t *testing.T, file, fn string) []string {
	var out []string
	for _, d := range parseFile(t, file).Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || (fn != "" && fd.Name.Name != fn) {
			continue
		}
		ast.Inspect(fd, func(n ast.Node) bool {
			cc, ok := n.(*ast.CaseClause)
			if !ok {
				return true
			}
			for _, e := range cc.List {
				if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s := unquote(t, lit); s != "" {
						out = append(out, s)
					}
				}
			}
			return true
		})
	}
	return out
}

// consts returns the values of the constants of file whose literal is of
// kind (token.STRING: unquoted; token.INT: as written).
func consts(t *testing.T, file string, kind token.Token) []string {
	var out []string
	for _, d := range parseFile(t, file).Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			for _, v := range s.(*ast.ValueSpec).Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == kind {
					if kind == token.STRING {
						out = append(out, unquote(t, lit))
					} else {
						out = append(out, lit.Value)
					}
				}
			}
		}
	}
	return out
}

// TestOptionsDocumented: every option and directive the code accepts is
// set in bold in its page.
func TestOptionsDocumented(t *testing.T) {
	want := map[string][]string{
		"claude.1":                funcFlagLiterals(t, "applets/claude/claude.go", "parseArgs"),
		"claude-update.1":         kongFlags(t, "applets/claude-update/cli.go", "flags"),
		"claude-sandbox-doctor.8": kongFlags(t, "applets/doctor/doctor.go", "flags"),
		"netns-enter.8":           funcFlagLiterals(t, "applets/netns-enter/args.go", "parseArgs"),
		"netns-setup.8": append(kongFlags(t, "applets/netns-setup/netnssetup.go", "flags"),
			caseStrings(t, "applets/netns-setup/netnssetup.go", "run")...),
		"claude-sandbox-init.5": append(consts(t, "internal/sandboxcfg/sandboxcfg.go", token.STRING),
			caseStrings(t, "internal/sandboxcfg/sandboxcfg.go", "Parse")...),
		"netns-firewall.conf.5": caseStrings(t, "internal/netpolicy/config.go", ""),
		"netns-dns.8":           kongFlags(t, "applets/netns-dns/netnsdns.go", "flags"),
		"claude-sandbox-net.1":  netFlags(t),
	}
	for file, names := range want {
		words := boldWords(read(t, file))
		bold := func(n string) bool {
			return words[n] || words[n+"="] || words[strings.TrimSuffix(n, "=")] || words["$"+n] || words[strings.TrimRight(n, ".:")]
		}
		for _, n := range names {
			// A directive of two words (git push) is both in bold.
			if f := strings.Fields(n); !bold(n) && (len(f) < 2 || !bold(f[0]) || !bold(f[1])) {
				t.Errorf("%s: %q is accepted by the code but not set in bold in the page", file, n)
			}
		}
	}
	// The extraction itself finds what it should (a change of style in
	// the code must not make this test vacuous).
	for file, must := range map[string][]string{
		"claude.1":              {"--shell", "--sandbox-dry-run", "--sandbox-seccomp=bpf", "--sandbox-doctor"},
		"claude-update.1":       {"--rollback", "--allow-unsigned", "-h"},
		"netns-enter.8":         {"--netns=", "--"},
		"netns-setup.8":         {"--testonly-run-dir", "--follow", "-f", "up", "status"},
		"netns-dns.8":           {"--testonly-listen", "--testonly-pin-floor", "-h"},
		"claude-sandbox-init.5": {"ro-try", "seccomp-allow", "pwd-under", "if", "end"},
		"netns-firewall.conf.5": {"allow", "resolver"},
		"claude-sandbox-net.1":  {"denials", "watch", "--since", "--session", "--port", "--namespace", "-h"},
	} {
		for _, m := range must {
			if !slices.Contains(want[file], m) {
				t.Errorf("%s: the code's options %q lack %q: fix the extraction", file, want[file], m)
			}
		}
	}
}

// netFlags are the commands of claude-sandbox net and the options of each.
func netFlags(t *testing.T) []string {
	out := kongFlags(t, "applets/net/net.go", "flags")
	out = slices.DeleteFunc(out, func(s string) bool { return s != "--help" && s != "-h" }) // the others are commands
	for _, typ := range []string{"denialsCmd", "allowCmd", "revokeCmd", "listCmd", "watchCmd"} {
		out = append(out, kongFlags(t, "applets/net/net.go", typ)...)
	}
	return append(out, caseStrings(t, "applets/net/net.go", "run")...)
}

// TestExitStatusFromCode: netns-enter's exit codes, the contract the doctor
// switches on (internal/multicall), are each an entry of its EXIT STATUS.
func TestExitStatusFromCode(t *testing.T) {
	src := read(t, "netns-enter.8")
	i := strings.Index(src, ".SH EXIT STATUS")
	j := strings.Index(src[i:], "\n.SH ")
	section := src[i : i+j]
	codes := append(consts(t, "internal/multicall/applet.go", token.INT), consts(t, "internal/multicall/refusal.go", token.INT)...)
	if len(codes) < 8 {
		t.Fatalf("found only the exit codes %q in internal/multicall: fix the extraction", codes)
	}
	for _, c := range codes {
		if c != "0" && !strings.Contains(section, "\n.TP\n.B "+c+"\n") {
			t.Errorf("netns-enter.8: exit code %s of internal/multicall is not an entry of EXIT STATUS", c)
		}
	}
}

var (
	// overstrike is how man marks bold and underline on a pipe.
	overstrike = regexp.MustCompile(`.\x08`)
	sectionRe  = regexp.MustCompile(`(?m)^\.SH (.*)$`)
	goString   = regexp.MustCompile(`"(?:[^"\\\n]|\\.)*"`)
)

// sourceStrings is the text of every string literal in the non-test Go
// files of dirs, unquoted.
func sourceStrings(t *testing.T, dirs []string) string {
	var b strings.Builder
	for _, d := range dirs {
		files, _ := filepath.Glob(filepath.Join(root(t), d, "*.go"))
		if len(files) == 0 {
			t.Fatalf("no Go files in %s", d)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			for _, q := range goString.FindAllString(read(t, f), -1) {
				if s, err := strconv.Unquote(q); err == nil {
					b.WriteString(s)
					b.WriteByte(0)
				}
			}
		}
	}
	return b.String()
}

// TestSections: every page has the sections a page needs, EXIT STATUS and
// DIAGNOSTICS included, and the Makefile installs exactly these pages.
func TestSections(t *testing.T) {
	for _, p := range pages {
		var got []string
		for _, m := range sectionRe.FindAllStringSubmatch(read(t, p.file), -1) {
			got = append(got, strings.Trim(m[1], `"`))
		}
		for _, want := range []string{"NAME", "SYNOPSIS", "DESCRIPTION", "EXIT STATUS", "DIAGNOSTICS", "SEE ALSO"} {
			if !slices.Contains(got, want) {
				t.Errorf("%s has no %s section (has %q)", p.file, want, got)
			}
		}
	}
	files, _ := filepath.Glob("*.[1-8]")
	var names []string
	for _, p := range pages {
		names = append(names, p.file)
	}
	slices.Sort(files)
	slices.Sort(names)
	if !slices.Equal(files, names) {
		t.Errorf("pages in man/ = %q, tested = %q", files, names)
	}
	mk := read(t, filepath.Join(root(t), "Makefile"))
	m := regexp.MustCompile(`(?m)^MANPAGES := ((?:.*\\\n)*.*)$`).FindStringSubmatch(mk)
	if m == nil {
		t.Fatal("no MANPAGES in the Makefile")
	}
	installed := strings.Fields(strings.ReplaceAll(m[1], "\\\n", " "))
	slices.Sort(installed)
	if !slices.Equal(installed, names) {
		t.Errorf("Makefile MANPAGES = %q, want %q", installed, names)
	}
}

// TestDiagnosticsFromCode: the bold text of every DIAGNOSTICS entry is
// text of the code's messages (placeholders are in italics).
func TestDiagnosticsFromCode(t *testing.T) {
	for _, p := range pages {
		src := read(t, p.file)
		code := sourceStrings(t, p.sources)
		i := strings.Index(src, ".SH DIAGNOSTICS")
		j := strings.Index(src[i:], "\n.SH ")
		lines := strings.Split(src[i:i+j], "\n")
		entries := 0
		for k, l := range lines {
			if k == 0 || (lines[k-1] != ".TP" && lines[k-1] != ".TQ") {
				continue
			}
			entries++
			for _, run := range inlineBold(l) {
				run = strings.TrimSpace(run)
				if len(run) < 4 {
					continue
				}
				if !strings.Contains(code, run) {
					t.Errorf("%s: DIAGNOSTICS quotes %q, which is in no message of %s", p.file, run, strings.Join(p.sources, ", "))
				}
			}
		}
		if entries < 3 {
			t.Errorf("%s: %d DIAGNOSTICS entries", p.file, entries)
		}
	}
}

// TestRender: man(1) renders every page without a warning.
func TestRender(t *testing.T) {
	manPath, err := exec.LookPath("man")
	if err != nil {
		testutil.Missing(t, "man (Debian packages man-db and groff-base)")
	}
	for _, p := range pages {
		cmd := exec.Command(manPath, "--warnings", "-l", p.file)
		cmd.Env = append(os.Environ(), "MANWIDTH=80", "MAN_KEEP_FORMATTING=0", "MANPAGER=cat", "PAGER=cat")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || stderr.Len() > 0 {
			t.Errorf("man --warnings -l %s: %v\n%s", p.file, err, stderr.String())
		}
		if !strings.Contains(overstrike.ReplaceAllString(string(out), ""), "EXIT STATUS") {
			t.Errorf("man -l %s printed no EXIT STATUS:\n%s", p.file, out)
		}
	}
	// A broken page does warn (so silence above means something).
	bad := filepath.Join(t.TempDir(), "bad.1")
	if err := os.WriteFile(bad, []byte(".TH BAD 1\n.SH NAME\nbad \\- page\n.XX\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(manPath, "--warnings", "-l", bad)
	cmd.Env = append(os.Environ(), "MANWIDTH=80", "MANPAGER=cat", "PAGER=cat")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.Run()
	if !strings.Contains(stderr.String(), "warning") {
		t.Errorf("man --warnings says nothing about an undefined macro: %q", stderr.String())
	}
}
