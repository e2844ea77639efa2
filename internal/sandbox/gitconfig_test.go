package sandbox

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// gitConfigInputs are config files in every syntax git reads; each one
// goes through git itself in TestParseGitConfigAsGit.
var gitConfigInputs = []string{
	"[core]\n\thooksPath = .husky/_\n",
	"[Core]\nHooksPath=x\n[core]fsmonitor\n",
	"\xef\xbb\xbf[a]\r\n\tb = c\r\n",
	"[include]\n\tpath = ../.gitconfig ; a comment\n# another\n",
	"[includeIf \"gitdir:~/work/\"]\n\tpath = ~/work/.gitconfig\n",
	"[includeIf \"gitdir/i:C:\\\\x\\\"y\\\"\"]\n\tpath = \"a b\" c\n",
	"[Section.SubSection]\n\tKey = v\n",
	"[alias]\n\tst = \"!sh -c 'echo \\\"x\\\"; ./run.sh'\" # comment\n",
	"[a]\n\tb = one \\\n  two\\tthree\\n\\\\ \"  four  \"   \n",
	"[a]\n\tb = x\n\tb\n\tb =\n\tc=\"#not\" #yes\n",
	"[a \"sub.with.dots\"]\n\tk-1 = v\n",
	"[diff \"lfs\"]\n\ttextconv = ./scripts/conv.sh --x=/abs/y\n[filter \"f\"]\n\tclean = tools/clean %f\n",
	"[a]b=c\n[d]\ne=f",
	"[a]\n  k = v ; c\n\n\n  ; comment\n  [b \"c\"] k2 = \"quoted ; semi\"\n",
}

// gitConfigList is what git makes of a config file: `name=value` lines
// (`name` alone for a key without value), or "error".
func gitConfigList(t *testing.T, content string) []string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "config", "--file", f, "--list", "-z")
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null")
	out, err := cmd.Output()
	if err != nil {
		return []string{"error"}
	}
	var got []string
	for _, rec := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if rec == "" {
			continue
		}
		name, value, ok := strings.Cut(rec, "\n")
		if !ok {
			got = append(got, name)
			continue
		}
		got = append(got, name+"="+value)
	}
	return got
}

func ourConfigList(b []byte) []string {
	es, err := parseGitConfig(b)
	if err != nil {
		return []string{"error"}
	}
	var got []string
	for _, e := range es {
		if e.NoValue {
			got = append(got, e.Var)
		} else {
			got = append(got, e.Var+"="+e.Value)
		}
	}
	return got
}

func TestParseGitConfigAsGit(t *testing.T) {
	testutil.RequireCommand(t, "git")
	bad := []string{"[a\n", "[a \"b]\n", "[a]\nb = \"open\n", "[a]\nb = \\q\n", "[a]\n1b = c\n", "[a]\nb c\n", "[a \"b\" ]\n", "[]\n"}
	for _, in := range append(append([]string(nil), gitConfigInputs...), bad...) {
		want := gitConfigList(t, in)
		if got := ourConfigList([]byte(in)); !cmp.Equal(got, want) {
			t.Errorf("parseGitConfig(%q) = %q, want (git) %q", in, got, want)
		}
	}
}

func TestParseGitConfigLines(t *testing.T) {
	es, err := parseGitConfig([]byte("[a]\n\tb = x \\\n y\n\n[c \"D\"]\n\tE\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []gitConfigEntry{
		{Section: "a", Key: "b", Value: "x  y", Line: 2, Var: "a.b"},
		{Section: "c", Subsection: "D", Key: "e", NoValue: true, Line: 6, Var: "c.D.e"},
	}
	if diff := cmp.Diff(want, es); diff != "" {
		t.Errorf("parseGitConfig mismatch (-want +got):\n%s", diff)
	}
	if _, err := parseGitConfig([]byte("[a]\nb = " + strings.Repeat("x", maxGitConfig) + "\n")); err == nil {
		t.Errorf("parseGitConfig of more than %d bytes: no error", maxGitConfig)
	}
	if _, err := parseGitConfig([]byte("[a]\n\tb = ok\n\tc = \"open\n")); err == nil || err.Error() != "line 3: bad config line" {
		t.Errorf("parseGitConfig of an open quote: %v, want line 3: bad config line", err)
	}
}

func TestGitNames(t *testing.T) {
	for _, tt := range []struct {
		in       string
		want     []string
		command  bool
		included bool
	}{
		{"[core]\nhooksPath = .husky/_", []string{".husky/_"}, false, false},
		{"[include]\npath = ../.gitconfig", []string{"../.gitconfig"}, false, true},
		{"[includeIf \"gitdir:/x/\"]\npath = ~/y", []string{"~/y"}, false, true},
		{"[core]\nfsmonitor = true", nil, false, false},
		{"[core]\nfsmonitor = ./fsmon --dir=/abs/d", []string{"./fsmon", "/abs/d"}, true, false},
		{"[alias]\nx = \"!sh -c 'a/b; c' && d\"", []string{"sh", "-c", "a/b; c", "d"}, true, false},
		// The ; is a comment to git, even between single quotes.
		{"[alias]\nx = !sh -c 'a/b; c' && d", []string{"sh", "-c", "a/b"}, true, false},
		{"[alias]\nst = status", nil, false, false},
		{"[credential \"https://x\"]\nhelper = !/opt/h get", []string{"/opt/h", "get"}, true, false},
		{"[gpg \"ssh\"]\nprogram = tools/sign", []string{"tools/sign"}, true, false},
		{"[filter \"lfs\"]\nprocess = git-lfs filter-process", []string{"git-lfs", "filter-process"}, true, false},
		{"[merge \"m\"]\ndriver = ./merge.sh %O %A %B", []string{"./merge.sh", "%O", "%A", "%B"}, true, false},
		{"[sendemail]\ntocmd = scripts/get_maintainer.pl --nogit", []string{"scripts/get_maintainer.pl", "--nogit"}, true, false},
		{"[sendemail \"work\"]\ncccmd = ./cc", []string{"./cc"}, true, false},
		{"[guitool \"lint\"]\ncmd = tools/lint", []string{"tools/lint"}, true, false},
		{"[submodule \"s\"]\nupdate = !tools/up", []string{"tools/up"}, true, false},
		{"[submodule \"s\"]\nupdate = rebase", nil, false, false},
		{"[lfs \"customtransfer.x\"]\npath = tools/xfer", []string{"tools/xfer"}, true, false},
		{"[lfs \"extension.x\"]\nsmudge = tools/sm %f", []string{"tools/sm", "%f"}, true, false},
		{"[init]\ntemplateDir = ~/tpl", []string{"~/tpl"}, false, false},
		{"[diff]\ntextconv = x", nil, false, false},
		{"[pager]\nlog = false", nil, false, false},
	} {
		es, err := parseGitConfig([]byte(tt.in))
		if err != nil || len(es) != 1 {
			t.Fatalf("parseGitConfig(%q) = %v, %v", tt.in, es, err)
		}
		got, command, included := gitNames(es[0])
		if !cmp.Equal(got, tt.want) || command != tt.command || included != tt.included {
			t.Errorf("gitNames(%q) = %q, %v, %v; want %q, %v, %v", tt.in, got, command, included, tt.want, tt.command, tt.included)
		}
	}
}

// FuzzParseGitConfig checks that the parser takes any input within
// bounded memory, and, when GIT_CONFIG_DIFF=1, that it agrees with git.
func FuzzParseGitConfig(f *testing.F) {
	for _, in := range gitConfigInputs {
		f.Add([]byte(in))
	}
	diff := os.Getenv("GIT_CONFIG_DIFF") == "1"
	f.Fuzz(func(t *testing.T, b []byte) {
		var before, after runtimeMem
		before.read()
		es, err := parseGitConfig(b)
		after.read()
		// Entries hold at most the file's bytes, a few times over.
		if got, bound := after.total-before.total, uint64(16*len(b)+1<<16); got > bound {
			t.Errorf("parseGitConfig of %d bytes allocated %d bytes, want at most %d", len(b), got, bound)
		}
		if err == nil {
			for _, e := range es {
				if e.Line < 1 || e.Line > bytes.Count(b, []byte("\n"))+1 || e.Key == "" {
					t.Errorf("parseGitConfig(%q): entry %+v", b, e)
				}
				for _, w := range shellWords(e.Value) {
					_ = w
				}
			}
		}
		if diff && !bytes.ContainsAny(b, "\x00") {
			if got, want := ourConfigList(b), gitConfigList(t, string(b)); !cmp.Equal(got, want) {
				t.Errorf("parseGitConfig(%q) = %q, want (git) %q", b, got, want)
			}
		}
	})
}
