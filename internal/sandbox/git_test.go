package sandbox

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// ignoreOrigin compares ops without the config line they came from.
var ignoreOrigin = cmpopts.IgnoreFields(bwrap.Op{}, "Origin")

const zeroSHA1 = "1111111111111111111111111111111111111111"

// gitIndex makes a repository with git itself and returns its index: a
// file, the gitlinks given, then setup's changes.
func gitIndex(t *testing.T, initArgs []string, links []string, setup ...[]string) []byte {
	t.Helper()
	testutil.RequireCommand(t, "git")
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	git(append([]string{"init", "-q"}, initArgs...)...)
	for _, f := range []string{"a-file", "b-file"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("add", "a-file")
	sha := zeroSHA1
	if len(initArgs) > 0 {
		sha = strings.Repeat("1", 64)
	}
	for _, l := range links {
		git("update-index", "--add", "--cacheinfo", "160000,"+sha+","+l)
	}
	for _, s := range setup {
		git(s...)
	}
	b, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestGitlinks(t *testing.T) {
	// In the index's order.
	links := []string{"lib/one", "lib/one-more", strings.Repeat("long/", 30) + "three", "vendor/deep/er/two"}
	tests := []struct {
		name    string
		init    []string
		setup   [][]string
		want    []string
		wantErr error
	}{
		{"version 2", nil, [][]string{{"update-index", "--index-version", "2"}}, links, nil},
		{"version 3 with an extended flag", nil, [][]string{{"update-index", "--index-version", "3"}, {"add", "-N", "b-file"}}, links, nil},
		{"version 4", nil, [][]string{{"update-index", "--index-version", "4"}}, links, nil},
		{"sha256", []string{"--object-format=sha256"}, nil, links, nil},
		{"skip-worktree left out", nil, [][]string{{"update-index", "--index-version", "3"}, {"update-index", "--skip-worktree", "lib/one"}},
			links[1:], nil},
		{"split index refused", nil, [][]string{{"update-index", "--split-index"}}, nil, errSplitIndex},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := gitIndex(t, tt.init, links, tt.setup...)
			got, err := gitlinks(b)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("gitlinks error = %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("gitlinks mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGitlinksMalformed(t *testing.T) {
	good := gitIndex(t, nil, []string{"sub"})
	for _, n := range []int{0, 4, 11, 12, 50, len(good) - 21, len(good) - 1} {
		if _, err := gitlinks(good[:n]); err == nil {
			t.Errorf("gitlinks of the first %d bytes: no error", n)
		}
	}
}

func FuzzGitlinks(f *testing.F) {
	f.Add([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x00" + strings.Repeat("\x00", 20)))
	f.Add([]byte("DIRC\x00\x00\x00\x04\x00\x00\x00\x01"))
	f.Add(craftedIndex(300))
	f.Fuzz(func(t *testing.T, b []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		links, err := gitlinks(b)
		runtime.ReadMemStats(&after)
		// Each of the two readings (SHA-1, SHA-256) keeps at most four
		// times the file in names, a name buffer, and the slice.
		if got, bound := after.TotalAlloc-before.TotalAlloc, uint64(16*len(b)+1<<20); got > bound {
			t.Errorf("gitlinks of %d bytes allocated %d bytes, want at most %d", len(b), got, bound)
		}
		if err == nil {
			for _, l := range links {
				if l == "" {
					t.Errorf("empty gitlink path from %q", b)
				}
			}
		}
	})
}

// gitHost is debianHost with a repository at ~/projects/p.
func gitHost(t *testing.T, links ...string) *fakeHost {
	h := debianHost()
	for _, d := range []string{"/home/u/projects/p/.git", "/home/u/projects/p/.git/hooks", "/home/u/projects/p/.git/modules"} {
		h.files[d] = "d"
	}
	h.files["/home/u/projects/p/.git/index"] = "f"
	h.contents["/home/u/projects/p/.git/index"] = string(gitIndex(t, nil, links))
	return h
}

func TestProtectGit(t *testing.T) {
	const p = "/home/u/projects/p"
	bind := func(k bwrap.Kind, path string) bwrap.Op { return bwrap.Op{Kind: k, Src: path, Dest: path} }
	tests := []struct {
		name   string
		links  []string
		host   func(*fakeHost)
		config string
		pwd    string
		// want are the ops after the project's own bind (or the
		// config's), in order.
		want []bwrap.Op
		// err is Build's error, if it must fail.
		err string
	}{
		{name: "the repository's .git", want: []bwrap.Op{bind(bwrap.ROBind, p+"/.git")}},
		{name: "no protection for a read-only project", config: "project ro", want: nil},
		{name: "submodules: their .git, or the whole directory while it has none", links: []string{"a/b/populated", "a/empty", "top"},
			host: func(h *fakeHost) {
				for _, d := range []string{"/a", "/a/b", "/a/b/populated", "/a/empty", "/top"} {
					h.files[p+d] = "d"
				}
				h.files[p+"/a/b/populated/.git"] = "f"
				h.contents[p+"/a/b/populated/.git"] = "gitdir: ../../../.git/modules/populated\n"
				h.files[p+"/top/.git"] = "d"
			},
			want: []bwrap.Op{
				bind(bwrap.Bind, p+"/a"), bind(bwrap.Bind, p+"/top"), bind(bwrap.Bind, p+"/a/b"), bind(bwrap.Bind, p+"/a/b/populated"),
				bind(bwrap.ROBind, p+"/.git"),
				bind(bwrap.ROBind, p+"/a/b/populated/.git"),
				bind(bwrap.ROBind, p+"/a/empty"),
				bind(bwrap.ROBind, p+"/top/.git"),
			}},
		{name: "the config's mounts below a directory bound onto itself apply again after it", links: []string{"top"},
			config: "tmpfs ~/projects/p/top/node_modules\nro /etc/hosts ~/projects/p/top/hosts\nro /etc/hosts ~/projects/p/elsewhere",
			host: func(h *fakeHost) {
				h.files[p+"/top"] = "d"
				h.files[p+"/top/.git"] = "d"
			},
			want: []bwrap.Op{
				{Kind: bwrap.Tmpfs, Dest: p + "/top/node_modules"},
				{Kind: bwrap.ROBind, Src: "/etc/hosts", Dest: p + "/top/hosts"},
				{Kind: bwrap.ROBind, Src: "/etc/hosts", Dest: p + "/elsewhere"},
				bind(bwrap.Bind, p+"/top"),
				{Kind: bwrap.Tmpfs, Dest: p + "/top/node_modules"},
				{Kind: bwrap.ROBind, Src: "/etc/hosts", Dest: p + "/top/hosts"},
				bind(bwrap.ROBind, p+"/.git"), bind(bwrap.ROBind, p+"/top/.git"),
			}},
		{name: "a submodule the config binds read-only needs nothing", links: []string{"top"},
			config: "ro ~/projects/p/top",
			host: func(h *fakeHost) {
				h.files[p+"/top"] = "d"
				h.files[p+"/top/.git"] = "d"
			},
			want: []bwrap.Op{bind(bwrap.ROBind, p+"/top"), bind(bwrap.ROBind, p+"/.git")}},
		{name: "a .git file naming a git directory in the project, and its commondir", pwd: p,
			host: func(h *fakeHost) {
				delete(h.files, p+"/.git/index")
				h.files[p+"/.git"] = "f"
				h.contents[p+"/.git"] = "gitdir: meta/wt\n"
				h.files[p+"/meta"] = "d"
				h.files[p+"/meta/wt"] = "d"
				h.files[p+"/meta/wt/commondir"] = "f"
				h.contents[p+"/meta/wt/commondir"] = "../common\n"
				h.files[p+"/meta/common"] = "d"
			},
			want: []bwrap.Op{
				bind(bwrap.Bind, p+"/meta"),
				bind(bwrap.ROBind, p+"/.git"), bind(bwrap.ROBind, p+"/meta/wt"), bind(bwrap.ROBind, p+"/meta/common"),
			}},
		{name: "linked worktrees in the project", links: []string{"lib/sub"},
			host: func(h *fakeHost) {
				for _, d := range []string{"/lib", "/lib/sub", "/.git/worktrees", "/.git/worktrees/feature", "/.git/worktrees/gone", "/wt", "/wt/feature", "/wt/feature/lib", "/wt/feature/lib/sub"} {
					h.files[p+d] = "d"
				}
				h.files[p+"/lib/sub/.git"] = "f"
				h.files[p+"/.git/worktrees/feature/gitdir"] = "f"
				h.contents[p+"/.git/worktrees/feature/gitdir"] = p + "/wt/feature/.git\n"
				h.files[p+"/.git/worktrees/feature/commondir"] = "f"
				h.contents[p+"/.git/worktrees/feature/commondir"] = "../..\n"
				h.files[p+"/.git/worktrees/feature/index"] = "f"
				h.contents[p+"/.git/worktrees/feature/index"] = h.contents[p+"/.git/index"]
				h.files[p+"/wt/feature/.git"] = "f"
				h.contents[p+"/wt/feature/.git"] = "gitdir: " + p + "/.git/worktrees/feature\n"
				h.files[p+"/wt/feature/lib/sub/.git"] = "f"
				// A worktree elsewhere, and one that is gone.
				h.files[p+"/.git/worktrees/gone/gitdir"] = "f"
				h.contents[p+"/.git/worktrees/gone/gitdir"] = "/home/u/other/gone/.git\n"
			},
			want: []bwrap.Op{
				bind(bwrap.Bind, p+"/lib"), bind(bwrap.Bind, p+"/wt"), bind(bwrap.Bind, p+"/lib/sub"), bind(bwrap.Bind, p+"/wt/feature"),
				bind(bwrap.Bind, p+"/wt/feature/lib"), bind(bwrap.Bind, p+"/wt/feature/lib/sub"),
				bind(bwrap.ROBind, p+"/.git"), bind(bwrap.ROBind, p+"/wt/feature/.git"),
				bind(bwrap.ROBind, p+"/wt/feature/lib/sub/.git"), bind(bwrap.ROBind, p+"/lib/sub/.git"),
			}},
		{name: "a .git file naming a git directory that does not exist: nothing more",
			host: func(h *fakeHost) {
				delete(h.files, p+"/.git/index")
				h.files[p+"/.git"] = "f"
				h.contents[p+"/.git"] = "gitdir: /home/u/main/.git/worktrees/p\n"
			},
			want: []bwrap.Op{bind(bwrap.ROBind, p+"/.git")}},
		{name: "a linked worktree: its common directory elsewhere visible read-only",
			host: func(h *fakeHost) {
				linkedWorktree(h, p, "/home/u/main", p+"/.git\n")
			},
			want: []bwrap.Op{bind(bwrap.ROBind, p+"/.git"), bind(bwrap.ROBind, "/home/u/main/.git")}},
		{name: "a .git file naming a git directory that does not name it back: not shown (the agent may have written it)",
			host: func(h *fakeHost) {
				linkedWorktree(h, p, "/home/u/main", "/home/u/elsewhere/.git\n")
			},
			want: []bwrap.Op{bind(bwrap.ROBind, p+"/.git")}},
		{name: "a linked worktree whose git directory is reached through a symlink is refused",
			host: func(h *fakeHost) {
				linkedWorktree(h, p, "/home/u/real", p+"/.git\n")
				h.files["/home/u/main"] = "/home/u/real"
			},
			err: "git directory /home/u/main/.git is reached through a symlink (to /home/u/real/.git): name /home/u/real/.git in the .git file or commondir: the sandbox cannot keep git from running what the agent writes; fix it or add `project ro` (or drop the rw bind) in ~/.claude-sandbox-init"},
		{name: "a config rw bind over the project is protected as well", config: "rw ~/projects",
			want: []bwrap.Op{bind(bwrap.Bind, "/home/u/projects"), bind(bwrap.Bind, p), bind(bwrap.ROBind, p+"/.git")}},
		{name: "a config rw bind of another repository", config: "rw ~/other",
			host: func(h *fakeHost) { h.files["/home/u/other/.git"] = "d" },
			want: []bwrap.Op{bind(bwrap.Bind, "/home/u/other"), bind(bwrap.ROBind, p+"/.git"), bind(bwrap.ROBind, "/home/u/other/.git")}},
		{name: "a config rw bind at another place", config: "rw ~/other /work",
			host: func(h *fakeHost) { h.files["/home/u/other/.git"] = "d" },
			want: []bwrap.Op{{Kind: bwrap.Bind, Src: "/home/u/other", Dest: "/work"}, bind(bwrap.ROBind, p+"/.git"),
				{Kind: bwrap.ROBind, Src: "/home/u/other/.git", Dest: "/work/.git"}}},
		{name: "a device or file bound rw has no repository", config: "dev /dev/kvm\nrw /etc/hosts /x",
			want: []bwrap.Op{bind(bwrap.DevBind, "/dev/kvm"), {Kind: bwrap.Bind, Src: "/etc/hosts", Dest: "/x"}, bind(bwrap.ROBind, p+"/.git")}},
		{name: "a read-only bind over .git needs nothing more", config: "ro ~/projects/p/.git",
			want: []bwrap.Op{bind(bwrap.ROBind, p+"/.git")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := gitHost(t, tt.links...)
			if tt.host != nil {
				tt.host(h)
			}
			s := baseSpec()
			if tt.pwd != "" {
				s.Pwd = tt.pwd
			}
			s.Config = parseConfig(t, s, tt.config)
			l, err := Build(h, s)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("Build error = %v, want %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			start := -1
			for i, o := range l.Plan.Ops {
				if o.Dest == p && o.IsBind() {
					start = i + 1
					break
				}
			}
			if start < 0 {
				t.Fatalf("project not bound: %v", l.Plan.Ops)
			}
			got := l.Plan.Ops[start:]
			if len(got) == 0 {
				got = nil
			}
			if diff := cmp.Diff(tt.want, got, ignoreOrigin); diff != "" {
				t.Errorf("ops after the project (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProtectGitRefuses(t *testing.T) {
	const p = "/home/u/projects/p"
	const fix = ": the sandbox cannot keep git from running what the agent writes; fix it or add `project ro` (or drop the rw bind) in ~/.claude-sandbox-init"
	tests := []struct {
		name  string
		links []string
		host  func(*fakeHost)
		want  string
	}{
		{"a symlinked .git", nil, func(h *fakeHost) {
			delete(h.files, p+"/.git/index")
			h.files[p+"/.git"] = "/home/u/other"
		}, p + "/.git is a symlink" + fix},
		{"a missing submodule", []string{"gone"}, nil,
			"submodule " + p + "/gone is missing (run git submodule update or git checkout -- gone on the host)" + fix},
		{"a symlink on a submodule's way", []string{"a/sub"}, func(h *fakeHost) { h.files[p+"/a"] = "/home/u/other" },
			p + "/a is a symlink in " + p + ", which the sandbox can write (the agent may have made it)" + fix},
		{"a symlinked submodule .git", []string{"sub"}, func(h *fakeHost) {
			h.files[p+"/sub"] = "d"
			h.files[p+"/sub/.git"] = "/home/u/other"
		}, p + "/sub/.git is a symlink" + fix},
		{"a split index", nil, func(h *fakeHost) {
			h.contents[p+"/.git/index"] = string(gitIndex(t, nil, nil, []string{"update-index", "--split-index"}))
		}, p + "/.git/index: split index (core.splitIndex) is not supported" + fix},
		{"a symlinked commondir", nil, func(h *fakeHost) {
			h.files[p+"/.git/commondir"] = "/home/u/other"
		}, p + "/.git/commondir: open " + p + "/.git/commondir: too many levels of symbolic links" + fix},
		{"a broken index", nil, func(h *fakeHost) { h.contents[p+"/.git/index"] = "DIRC\x00\x00\x00\x02\x00\x00\x00\x05junk" },
			p + "/.git/index: malformed git index: 5 entries do not fit in 16 bytes: remove this file (in a repository of yours, git reset makes it anew)"},
		{"a crafted index", nil, func(h *fakeHost) { h.contents[p+"/.git/index"] = string(craftedIndex(5000)) },
			p + "/.git/index: malformed git index: submodule paths longer than 1304224 bytes in all: remove this file (in a repository of yours, git reset makes it anew)"},
		{"a submodule name with escapes", []string{"x\x1b]0;pwned\x07"}, nil,
			`submodule "` + p + `/x\x1b]0;pwned\a" is missing (run git submodule update or git checkout -- "x\x1b]0;pwned\a" on the host)` + fix},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := gitHost(t, tt.links...)
			if tt.host != nil {
				tt.host(h)
			}
			_, err := Build(h, baseSpec())
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Build error = %v\nwant %s", err, tt.want)
			}
		})
	}
}

func TestGlobQuote(t *testing.T) {
	for _, p := range []string{"/a/b", "/a[1]/b*", "/x?/y\\z"} {
		if ok, err := filepath.Match(globQuote(p), p); !ok || err != nil {
			t.Errorf("Match(globQuote(%q), %q) = %v, %v; want true", p, p, ok, err)
		}
	}
	if ok, _ := filepath.Match(globQuote("/a*"), "/ab"); ok {
		t.Errorf("globQuote(/a*) matches /ab")
	}
}

// TestProtectGitNested: started in a directory of checkouts, the project
// holds other repositories; those below it, at any depth, are read-only
// too, whether or not the project has a .git. Not through a link.
func TestProtectGitNested(t *testing.T) {
	const p = "/home/u/projects/p"
	h := gitHost(t)
	h.files["/home/u/projects/q"] = "d"
	h.files["/home/u/projects/q/.git"] = "f"
	h.files["/home/u/projects/link"] = "q"
	h.files["/home/u/projects/file"] = "f"
	h.files["/home/u/projects/deep"] = "d"
	h.files["/home/u/projects/deep/a"] = "d"
	h.files["/home/u/projects/deep/a/.git"] = "d"
	for _, d := range []string{"v", "v/1", "v/1/2", "v/1/2/3", "v/1/2/3/4", "v/1/2/3/4/5"} {
		h.files["/home/u/projects/"+d] = "d"
	}
	h.files["/home/u/projects/v/1/2/3/4/5/.git"] = "f"
	s := baseSpec()
	s.Pwd = "/home/u/projects"
	l, err := Build(h, s)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range l.Plan.Ops {
		if o.Kind == bwrap.ROBind && strings.HasPrefix(o.Src, "/home/u/projects") {
			got = append(got, o.Src+" at "+o.Dest)
		}
	}
	want := []string{p + "/.git at " + p + "/.git", "/home/u/projects/q/.git at /home/u/projects/q/.git",
		"/home/u/projects/deep/a/.git at /home/u/projects/deep/a/.git",
		"/home/u/projects/v/1/2/3/4/5/.git at /home/u/projects/v/1/2/3/4/5/.git"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("read-only binds (-want +got):\n%s", diff)
	}
	// A .git the agent of an earlier start made in ~/projects changes
	// nothing for them.
	h.files["/home/u/projects/.git"] = "d"
	if l, err = Build(h, s); err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, o := range l.Plan.Ops {
		if o.Kind == bwrap.ROBind && strings.HasPrefix(o.Src, "/home/u/projects") {
			got = append(got, o.Src+" at "+o.Dest)
		}
	}
	want = append([]string{"/home/u/projects/.git at /home/u/projects/.git"}, want...)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("with a .git in the project, read-only binds (-want +got):\n%s", diff)
	}
}

// craftedIndex is a version 4 index of n gitlinks whose names grow by one
// byte per entry, each taking the previous name whole and adding a byte,
// with the 0xfff length flag that leaves the name's length unchecked.
func craftedIndex(n int) []byte {
	b := []byte("DIRC\x00\x00\x00\x04")
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	for i := 0; i < n; i++ {
		var e [62]byte
		binary.BigEndian.PutUint32(e[24:], 0o160000)
		binary.BigEndian.PutUint16(e[60:], 0xfff)
		b = append(b, e[:]...)
		b = append(b, 0, 'a'+byte(i%26), 0)
	}
	return append(b, make([]byte, 20)...)
}

// The index reader's memory is bounded by the file's size: a crafted
// 2.6 MB version 4 index (made in a new sub/.git by the agent) is refused
// having allocated far less than 32 MiB, not the gigabytes that building
// each name anew would take.
func TestGitlinksCraftedIndexBoundedMemory(t *testing.T) {
	b := craftedIndex(40000)
	if len(b) < 2_600_000 {
		t.Fatalf("crafted index of %d bytes, want 2.6 MB", len(b))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	links, err := gitlinks(b)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "name longer than 4095 bytes") {
		t.Errorf("gitlinks(crafted) = %d links, %v; want a name longer than 4095 bytes refused", len(links), err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 32<<20 {
		t.Errorf("gitlinks(crafted) allocated %d MiB, want under 32 MiB", got>>20)
	}
}

// runtimeMem reads the bytes allocated so far.
type runtimeMem struct{ total uint64 }

func (m *runtimeMem) read() {
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	m.total = s.TotalAlloc
}

// linkedWorktree makes project p, in fake host h, a linked worktree
// whose .git file names /home/u/main/.git/worktrees/p, with that
// directory made in the repository at main (commondir ../.., gitdir
// holding gitdir).
func linkedWorktree(h *fakeHost, p, main, gitdir string) {
	delete(h.files, p+"/.git/index")
	h.files[p+"/.git"] = "f"
	h.contents[p+"/.git"] = "gitdir: /home/u/main/.git/worktrees/p\n"
	wt := main + "/.git/worktrees/p"
	for _, d := range []string{main, main + "/.git", main + "/.git/worktrees", wt} {
		h.files[d] = "d"
	}
	h.files[wt+"/commondir"] = "f"
	h.contents[wt+"/commondir"] = "../..\n"
	h.files[wt+"/gitdir"] = "f"
	h.contents[wt+"/gitdir"] = gitdir
}
