package sandbox

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
)

// TestGitConsulted: what the config files name, and where .git's links
// point, is bound read-only when the sandbox could write it; the dry run
// says which entry named it.
func TestGitConsulted(t *testing.T) {
	const p = "/home/u/projects/p"
	ro := func(path string) bwrap.Op { return bwrap.Op{Kind: bwrap.ROBind, Src: path, Dest: path} }
	pin := func(path string) bwrap.Op { return bwrap.Op{Kind: bwrap.Bind, Src: path, Dest: path} }
	tests := []struct {
		name  string
		host  func(*fakeHost)
		want  []bwrap.Op // after the project's own bind
		notes []string
	}{
		{"husky", func(h *fakeHost) {
			h.contents[p+"/.git/config"] = "[core]\n\thooksPath = .husky/_\n"
			h.files[p+"/.git/config"] = "f"
			h.files[p+"/.husky"] = "d"
			h.files[p+"/.husky/_"] = "d"
		}, []bwrap.Op{pin(p + "/.husky"), ro(p + "/.git"), ro(p + "/.husky/_"), ro(p + "/.husky")},
			[]string{"git: " + p + "/.husky/_ read-only (host git reads or runs it: core.hookspath in " + p + "/.git/config:2)"}},
		{"an include and what it names", func(h *fakeHost) {
			h.contents[p+"/.git/config"] = "[include]\n\tpath = ../.gitconfig\n"
			h.files[p+"/.git/config"] = "f"
			h.files[p+"/.gitconfig"] = "f"
			h.contents[p+"/.gitconfig"] = "[diff \"x\"]\n\ttextconv = tools/conv --opt\n[core]\n\tfsmonitor = true\n"
			h.files[p+"/tools"] = "d"
			h.files[p+"/tools/conv"] = "f"
		}, []bwrap.Op{pin(p + "/tools"), ro(p + "/.git"), ro(p + "/.gitconfig"), ro(p + "/tools/conv")},
			[]string{"git: " + p + "/.gitconfig read-only (host git reads or runs it: include.path in " + p + "/.git/config:2)",
				"git: " + p + "/tools/conv read-only (host git reads or runs it: diff.x.textconv in " + p + "/.gitconfig:2)"}},
		{"a global config naming the project", func(h *fakeHost) {
			h.files["/home/u/.gitconfig"] = "f"
			h.contents["/home/u/.gitconfig"] = "[core]\n\texcludesFile = ~/projects/p/ignore\n[alias]\n\tx = !~/projects/p/run.sh\n"
			h.files[p+"/ignore"] = "f"
			h.files[p+"/run.sh"] = "f"
		}, []bwrap.Op{ro(p + "/.git"), ro(p + "/ignore"), ro(p + "/run.sh")}, nil},
		{"a hooks symlink into the work tree", func(h *fakeHost) {
			delete(h.files, p+"/.git/hooks")
			h.files[p+"/.git/hooks"] = "../githooks"
			h.files[p+"/githooks"] = "d"
		}, []bwrap.Op{ro(p + "/.git"), ro(p + "/githooks")},
			[]string{"git: " + p + "/githooks read-only (host git reads or runs it: a symlink in " + p + "/.git/hooks:0)"}},
		{"outside what the sandbox writes: nothing", func(h *fakeHost) {
			h.contents[p+"/.git/config"] = "[core]\n\thooksPath = /home/u/other\n"
			h.files[p+"/.git/config"] = "f"
		}, []bwrap.Op{ro(p + "/.git")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := gitHost(t)
			tt.host(h)
			l, err := Build(h, baseSpec())
			if err != nil {
				t.Fatal(err)
			}
			ops := l.Plan.Ops
			i := len(ops) - 1
			for ; i >= 0 && !(ops[i].Src == p && ops[i].Dest == p); i-- {
			}
			if diff := cmp.Diff(tt.want, ops[i+1:], ignoreOrigin); diff != "" {
				t.Errorf("ops after the project (-want +got):\n%s", diff)
			}
			for _, n := range tt.notes {
				found := false
				for _, got := range l.Notes {
					found = found || got == n
				}
				if !found {
					t.Errorf("notes lack %q: %q", n, l.Notes)
				}
			}
		})
	}
}

// A config file included by two repositories names, relative to each work
// tree, a path in each.
func TestGitConsultedSharedInclude(t *testing.T) {
	const top = "/home/u/projects"
	h := gitHost(t)
	h.files["/home/u/other/shared"] = "f"
	h.contents["/home/u/other/shared"] = "[core]\n\thooksPath = .hooks\n"
	for _, r := range []string{"p", "q"} {
		for _, d := range []string{"", "/.git", "/.hooks"} {
			h.files[top+"/"+r+d] = "d"
		}
		h.files[top+"/"+r+"/.git/config"] = "f"
		h.contents[top+"/"+r+"/.git/config"] = "[include]\n\tpath = /home/u/other/shared\n"
	}
	s := baseSpec()
	s.Pwd = top
	l, err := Build(h, s)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"p", "q"} {
		want := bwrap.Op{Kind: bwrap.ROBind, Src: top + "/" + r + "/.hooks", Dest: top + "/" + r + "/.hooks"}
		found := false
		for _, o := range l.Plan.Ops {
			found = found || cmp.Equal(o, want, ignoreOrigin)
		}
		if !found {
			t.Errorf("no %v in %v", want, l.Plan.Ops)
		}
	}
}

func TestGitConsultedRefused(t *testing.T) {
	const p = "/home/u/projects/p"
	tests := []struct {
		name string
		host func(*fakeHost)
		want string
	}{
		{"a missing hooks directory", func(h *fakeHost) {
			h.contents[p+"/.git/config"] = "[core]\n\thooksPath = .githooks\n"
			h.files[p+"/.git/config"] = "f"
		}, "core.hookspath in " + p + "/.git/config:2 names " + p + "/.githooks, which does not exist in " + p + ", where the sandbox can write: create it on the host (an empty file or directory does) or remove the setting; or add `project ro` in ~/.claude-sandbox-init"},
		{"an include through a symlink the agent can write", func(h *fakeHost) {
			h.contents[p+"/.git/config"] = "[include]\n\tpath = ../conf/x\n"
			h.files[p+"/.git/config"] = "f"
			h.files[p+"/conf"] = "/home/u/other"
		}, "include.path in " + p + "/.git/config:2 names " + p + "/conf/x: " + p + "/conf is a symlink where the sandbox can write (the agent may have made it): replace it by what it names, on the host"},
		{"a config git cannot read", func(h *fakeHost) {
			h.contents[p+"/.git/config"] = "[core\n"
			h.files[p+"/.git/config"] = "f"
		}, "git config " + p + "/.git/config: line 1: bad config line: host git cannot read it either: fix it on the host"},
		{"an include loop stops at git's depth", func(h *fakeHost) {
			h.contents[p+"/.git/config"] = "[include]\n\tpath = /home/u/other/a\n"
			h.files[p+"/.git/config"] = "f"
			h.files["/home/u/other/a"] = "f"
			h.contents["/home/u/other/a"] = "[include]\n\tpath = b\n"
			h.files["/home/u/other/b"] = "f"
			h.contents["/home/u/other/b"] = "[include]\n\tpath = a\n"
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := gitHost(t)
			tt.host(h)
			_, err := Build(h, baseSpec())
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Build error = %v, want none", err)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Build error = %v\nwant %s", err, tt.want)
			}
			if strings.Count(err.Error(), "\n") != 0 {
				t.Errorf("Build error is more than one line: %q", err)
			}
		})
	}
}
