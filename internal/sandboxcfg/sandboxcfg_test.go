package sandboxcfg

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var testVars = Vars{Home: "/home/u", Pwd: "/home/u/projects/p", User: "u"}

func parse(src string) ([]Directive, error) {
	return Parse([]byte(src), Options{
		Name: "~/.claude-sandbox-init",
		Vars: testVars,
		KnownSyscall: func(s string) bool {
			return s == "perf_event_open" || s == "ptrace"
		},
	})
}

func TestParse(t *testing.T) {
	projects := []Cond{{Name: PwdUnder, Path: "/home/u/projects", Line: 1}}
	tests := []struct {
		name string
		src  string
		want []Directive
	}{
		{"empty", "", nil},
		{"comments and blanks", "# a comment\n\n   \t\n  # indented\n", nil},
		{"ro same path", "ro /usr/local", []Directive{{Line: 1, Name: RO, Args: []string{"/usr/local"}}}},
		{"ro other dest", "ro /a /b", []Directive{{Line: 1, Name: RO, Args: []string{"/a", "/b"}}}},
		{"rw tilde", "rw ~/.opam", []Directive{{Line: 1, Name: RW, Args: []string{"/home/u/.opam"}}}},
		{"tilde alone", "rw ~", []Directive{{Line: 1, Name: RW, Args: []string{"/home/u"}}}},
		{"tilde inside word is literal", "rw /a~b", []Directive{{Line: 1, Name: RW, Args: []string{"/a~b"}}}},
		{"ro-try", "ro-try /var/lib/pacman", []Directive{{Line: 1, Name: ROTry, Args: []string{"/var/lib/pacman"}}}},
		{"rw-try", "rw-try /x", []Directive{{Line: 1, Name: RWTry, Args: []string{"/x"}}}},
		{"dev", "dev /dev/kvm", []Directive{{Line: 1, Name: Dev, Args: []string{"/dev/kvm"}}}},
		{"dev-try", "dev-try /dev/dri /dev/dri", []Directive{{Line: 1, Name: DevTry, Args: []string{"/dev/dri", "/dev/dri"}}}},
		{"tmpfs", "tmpfs ~/projects", []Directive{{Line: 1, Name: Tmpfs, Args: []string{"/home/u/projects"}}}},
		{"dir", "dir /srv/x", []Directive{{Line: 1, Name: Dir, Args: []string{"/srv/x"}}}},
		{"symlink relative target", "symlink ../x /a/b", []Directive{{Line: 1, Name: Symlink, Args: []string{"../x", "/a/b"}}}},
		{"setenv quoted", `setenv EDITOR "vim -u NONE"`, []Directive{{Line: 1, Name: Setenv, Args: []string{"EDITOR", "vim -u NONE"}}}},
		{"setenv empty value", `setenv X ""`, []Directive{{Line: 1, Name: Setenv, Args: []string{"X", ""}}}},
		{"setenv single quotes keep dollar", `setenv PS1 '$HOME \w> '`, []Directive{{Line: 1, Name: Setenv, Args: []string{"PS1", `$HOME \w> `}}}},
		{"setenv double quote expansion", `setenv WHO "$USER@${HOME}"`, []Directive{{Line: 1, Name: Setenv, Args: []string{"WHO", "u@/home/u"}}}},
		{"unsetenv many", "unsetenv A B_2", []Directive{{Line: 1, Name: Unsetenv, Args: []string{"A", "B_2"}}}},
		{"keepenv many", "keepenv GITHUB_TOKEN HF_TOKEN", []Directive{{Line: 1, Name: Keepenv, Args: []string{"GITHUB_TOKEN", "HF_TOKEN"}}}},
		{"chdir pwd", "chdir $PWD", []Directive{{Line: 1, Name: Chdir, Args: []string{"/home/u/projects/p"}}}},
		{"command", "command /opt/claude/bin/claude --model 'a b'", []Directive{{Line: 1, Name: Command, Args: []string{"/opt/claude/bin/claude", "--model", "a b"}}}},
		{"project", "project ro\nproject off\nproject rw", []Directive{
			{Line: 1, Name: Project, Args: []string{"ro"}},
			{Line: 2, Name: Project, Args: []string{"off"}},
			{Line: 3, Name: Project, Args: []string{"rw"}},
		}},
		{"home", "home shared\nhome project", []Directive{
			{Line: 1, Name: Home, Args: []string{"shared"}},
			{Line: 2, Name: Home, Args: []string{"project"}},
		}},
		{"cache", "cache shared\ncache project", []Directive{
			{Line: 1, Name: Cache, Args: []string{"shared"}},
			{Line: 2, Name: Cache, Args: []string{"project"}},
		}},
		{"git", "git commit\ngit read-only", []Directive{
			{Line: 1, Name: Git, Args: []string{"commit"}},
			{Line: 2, Name: Git, Args: []string{"read-only"}},
		}},
		{"bwrap raw", "bwrap --remount-ro /x", []Directive{{Line: 1, Name: Bwrap, Args: []string{"--remount-ro", "/x"}}}},
		{"seccomp", "seccomp-allow perf_event_open\nseccomp-deny ptrace", []Directive{
			{Line: 1, Name: SeccompAllow, Args: []string{"perf_event_open"}},
			{Line: 2, Name: SeccompDeny, Args: []string{"ptrace"}},
		}},
		{"trailing comment", "ro /a # why", []Directive{{Line: 1, Name: RO, Args: []string{"/a"}}}},
		{"hash inside word", "ro /a#b", []Directive{{Line: 1, Name: RO, Args: []string{"/a#b"}}}},
		{"crlf", "ro /a\r\nrw /b\r\n", []Directive{{Line: 1, Name: RO, Args: []string{"/a"}}, {Line: 2, Name: RW, Args: []string{"/b"}}}},
		{"path cleaned", "ro /a//b/../c/", []Directive{{Line: 1, Name: RO, Args: []string{"/a/c"}}}},
		{"if block", "if pwd-under ~/projects\n  tmpfs ~/projects\n  rw $PWD\nend\nro /z", []Directive{
			{Line: 2, Name: Tmpfs, Args: []string{"/home/u/projects"}, When: projects},
			{Line: 3, Name: RW, Args: []string{"/home/u/projects/p"}, When: projects},
			{Line: 5, Name: RO, Args: []string{"/z"}},
		}},
		{"nested if not", "if exists /a\nif not exists /b\nro /c\nend\nend", []Directive{
			{Line: 3, Name: RO, Args: []string{"/c"}, When: []Cond{{Name: Exists, Path: "/a", Line: 1}, {Not: true, Name: Exists, Path: "/b", Line: 2}}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parse(tt.src)
			if err != nil {
				t.Fatalf("Parse(%q) error: %v", tt.src, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse(%q) mismatch (-want +got):\n%s", tt.src, diff)
			}
		})
	}
}

func TestParseEscapes(t *testing.T) {
	got, err := parse(`setenv A "q\"b\\s\$x"` + "\n" + `setenv B c\ d\'e`)
	if err != nil {
		t.Fatal(err)
	}
	want := []Directive{
		{Line: 1, Name: Setenv, Args: []string{"A", `q"b\s$x`}},
		{Line: 2, Name: Setenv, Args: []string{"B", `c d'e`}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string
	}{
		{"unknown directive", "mount /a", `~/.claude-sandbox-init:1: unknown directive "mount"`},
		{"missing argument", "\nro", "~/.claude-sandbox-init:2: ro: missing argument: want ro SRC [DEST]"},
		{"too many arguments", "tmpfs /a /b", "~/.claude-sandbox-init:1: tmpfs: too many arguments: want tmpfs DIR"},
		{"relative path", "rw projects/x", `~/.claude-sandbox-init:1: rw: "projects/x" is not an absolute path (start it with /, ~/ or $HOME)`},
		{"relative dest", "ro /a b", `~/.claude-sandbox-init:1: ro: "b" is not an absolute path (start it with /, ~/ or $HOME)`},
		{"tilde user", "ro ~root/x", `~/.claude-sandbox-init:1: ro: "~root/x" is not an absolute path (start it with /, ~/ or $HOME)`},
		{"unterminated single", "ro '/a", "~/.claude-sandbox-init:1: unterminated ' quote"},
		{"unterminated double", `setenv A "x`, `~/.claude-sandbox-init:1: unterminated " quote`},
		{"nul byte", "ro /a\x00b", "~/.claude-sandbox-init:1: line contains a NUL byte"},
		{"unknown variable", "ro $XDG_DATA_HOME/x", "~/.claude-sandbox-init:1: unknown variable $XDG_DATA_HOME: only $HOME, $PWD and $USER expand (write '$XDG_DATA_HOME' for a literal)"},
		{"stray dollar", "setenv A 5$", `~/.claude-sandbox-init:1: stray $: write '$' or \$ for a literal dollar`},
		{"unterminated brace", "ro ${HOME", "~/.claude-sandbox-init:1: unterminated ${"},
		{"trailing backslash", `ro /a\`, "~/.claude-sandbox-init:1: backslash at end of line (lines do not continue)"},
		{"bad env name", "setenv 1X y", `~/.claude-sandbox-init:1: setenv: "1X" is not a variable name`},
		{"setenv missing value", "setenv X", `~/.claude-sandbox-init:1: setenv: missing argument: want setenv NAME VALUE (quote a VALUE with blanks: "a b")`},
		{"unknown syscall", "seccomp-allow perf_event_open frobnicate", `~/.claude-sandbox-init:1: seccomp-allow: unknown syscall "frobnicate"`},
		{"malformed syscall", "seccomp-deny ../x", `~/.claude-sandbox-init:1: seccomp-deny: unknown syscall "../x"`},
		{"end without if", "end", "~/.claude-sandbox-init:1: end without if"},
		{"if without end", "ro /a\nif exists /x\nro /b", "~/.claude-sandbox-init:2: if without end"},
		{"unknown condition", "if pwd-is /x", `~/.claude-sandbox-init:1: if: unknown condition "pwd-is": want pwd-under DIR or exists PATH`},
		{"condition relative", "if pwd-under projects", `~/.claude-sandbox-init:1: if: pwd-under: "projects" is not an absolute path (start it with /, ~/ or $HOME)`},
		{"git value", "git pull", `~/.claude-sandbox-init:1: git: "pull": want read-only or commit`},
		{"git push no remote", "git push", `~/.claude-sandbox-init:1: git push: missing argument: want git push REMOTE [PATTERN...] [ci:PATH...] [ci]`},
		{"git push ci path", "git push origin ci:../x", `~/.claude-sandbox-init:1: git push: "ci:../x": ci: names a path in the repository, relative to its top, without . or .. components (ci:.woodpecker/)`},
		{"git push ci absolute", "git push origin ci:/x", `~/.claude-sandbox-init:1: git push: "ci:/x": ci: names a path in the repository, relative to its top, without . or .. components (ci:.woodpecker/)`},
		{"git push bad remote", "git push -x", `~/.claude-sandbox-init:1: git push: "-x" is not a remote's name: use letters, digits, '.', '_' and '-'`},
		{"git push bad pattern", "git push origin a/*/b", `~/.claude-sandbox-init:1: git push: "a/*/b" is not a branch pattern: use a branch name, with at most one '*' as its last component (agent/*)`},
		{"git push dot-dot", "git push origin a..b", `~/.claude-sandbox-init:1: git push: "a..b" is not a branch pattern: use a branch name, with at most one '*' as its last component (agent/*)`},
		{"project value", "project yes", `~/.claude-sandbox-init:1: project: "yes": want off, ro or rw`},
		{"keepenv missing", "\nkeepenv", "~/.claude-sandbox-init:2: keepenv: missing argument: want keepenv NAME..."},
		{"keepenv bad name", "keepenv GITHUB-TOKEN", `~/.claude-sandbox-init:1: keepenv: "GITHUB-TOKEN" is not a variable name`},
		{"project missing", "project", "~/.claude-sandbox-init:1: project: missing argument: want project off|ro|rw"},
		{"project too many", "project ro rw", "~/.claude-sandbox-init:1: project: too many arguments: want project off|ro|rw"},
		{"home value", "home private", `~/.claude-sandbox-init:1: home: "private": want project or shared`},
		{"home missing", "home", "~/.claude-sandbox-init:1: home: missing argument: want home project|shared"},
		{"home too many", "home shared project", "~/.claude-sandbox-init:1: home: too many arguments: want home project|shared"},
		{"cache value", "cache global", `~/.claude-sandbox-init:1: cache: "global": want project or shared`},
		{"cache missing", "cache", "~/.claude-sandbox-init:1: cache: missing argument: want cache project|shared"},
		{"cache too many", "cache shared project", "~/.claude-sandbox-init:1: cache: too many arguments: want cache project|shared"},
		{"cache escape", "cache 'shared\x1b[2K'", `~/.claude-sandbox-init:1: cache: "shared\x1b[2K": want project or shared`},
		{"empty path", `ro ""`, "~/.claude-sandbox-init:1: ro: empty path"},
		{"command relative", "command claude", `~/.claude-sandbox-init:1: command: "claude" is not an absolute path (start it with /, ~/ or $HOME)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(tt.src)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Parse(%q) error = %v, want %s", tt.src, err, tt.want)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("error %T is not *Error", err)
			}
		})
	}
}

func TestParseNewlineInVariable(t *testing.T) {
	_, err := Parse([]byte("rw $PWD"), Options{Name: "f", Vars: Vars{Home: "/h", Pwd: "/h/a\nb", User: "u"}})
	want := `f:1: rw: path "/h/a\nb" contains a newline`
	if err == nil || err.Error() != want {
		t.Fatalf("Parse error = %v, want %s", err, want)
	}
}

// The example file shipped in install/ must parse, commented or not.
func TestShippedExample(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "install", "claude-sandbox-init"))
	if err != nil {
		t.Fatal(err)
	}
	if d, err := parse(string(b)); err != nil || len(d) != 0 {
		t.Fatalf("shipped file: %v, %d directives active (want all commented out)", err, len(d))
	}
	// Uncomment the example blocks: after a "## Example" header, up to the
	// next blank line, drop one leading #.
	var un []string
	in := false
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(l, "## Example"):
			in = true
		case l == "":
			in = false
		case in && !strings.HasPrefix(l, "##"):
			un = append(un, strings.TrimPrefix(l, "#"))
		}
	}
	d, err := parse(strings.Join(un, "\n"))
	if err != nil {
		t.Fatalf("shipped examples, uncommented: %v", err)
	}
	var names []string
	for _, x := range d {
		names = append(names, x.Name)
	}
	want := []string{RWTry, ROTry, ROTry, ROTry, Project, Project, RW}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("shipped examples (-want +got):\n%s", diff)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"ro /a /b\nrw ~/.opam\n",
		"if pwd-under ~/projects\n tmpfs ~/projects\n rw $PWD\n chdir $PWD\nend\n",
		`setenv A "x $USER \" y" 'z'` + "\n",
		"bwrap --remount-ro /x\nseccomp-allow perf_event_open\n",
		"ro ${HOME}/x\\ y # c\n",
		"symlink usr/lib /lib\nunsetenv A B\ncommand /bin/sh -c 'x'\n",
		"home shared\nif pwd-under ~/work\n home project\nend\n",
		"cache shared\nif pwd-under ~/work\n cache project\nend\n",
		"limit memory 8G\nlimit tasks 2048\nif pwd-under ~/work\n limit cpu 200%\n limit tmp 4G\nend\nbudget optional\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		ds, err := Parse(src, Options{Name: "f", Vars: testVars})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Line < 1 {
				t.Fatalf("error without a line: %v", err)
			}
			// One line: values are quoted with %q.
			if strings.ContainsAny(err.Error(), "\n\x00") {
				t.Fatalf("error is not one clean line: %q", err)
			}
			return
		}
		for _, d := range ds {
			if d.Line < 1 {
				t.Fatalf("directive %+v without a line", d)
			}
			for _, a := range d.Args {
				if strings.ContainsRune(a, 0) {
					t.Fatalf("argument with NUL: %+v", d)
				}
			}
			switch d.Name {
			case RO, ROTry, RW, RWTry, Dev, DevTry, Tmpfs, Dir, Chdir:
				for _, a := range d.Args {
					if !filepath.IsAbs(a) || strings.ContainsAny(a, "\n\r") || filepath.Clean(a) != a {
						t.Fatalf("bad path in %+v", d)
					}
				}
			}
		}
	})
}

func TestGitPushLine(t *testing.T) {
	ds, err := parse("git commit\ngit push origin agent/* feat ci:.woodpecker/ ci\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 2 || ds[1].Name != GitPush || strings.Join(ds[1].Args, " ") != "origin agent/* feat ci:.woodpecker/ ci" {
		t.Fatalf("parse = %+v", ds)
	}
	for _, tt := range []struct {
		pattern, branch string
		want            bool
	}{
		{"agent/*", "agent/x", true},
		{"agent/*", "agent/x/y", true},
		{"agent/*", "agent/", false},
		{"agent/*", "agentx", false},
		{"agent/*", "main", false},
		{"feat", "feat", true},
		{"feat", "feat2", false},
	} {
		if got := PushPatternMatches(tt.pattern, tt.branch); got != tt.want {
			t.Errorf("PushPatternMatches(%q, %q) = %v", tt.pattern, tt.branch, got)
		}
	}
}
