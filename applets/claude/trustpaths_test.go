//go:build linux

package claude_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// symlinkAsUser makes link -> target, owned by the test user.
func symlinkAsUser(t *testing.T, s *testutil.Sandbox, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	s.User.Chown(t, link)
}

// hostRunsLine is the line of a start whose project is not bound because
// it holds what the host runs.
func hostRunsLine(dir, holds string) string {
	return "claude: the working directory " + dir + " is not visible in the sandbox: its project " + dir + " holds " + holds + ", which the host runs or reads; add `project ro` to ~/.claude-sandbox-init to show it read-only\n"
}

// TestDanglingLinksIntoProjectNotWritable: a link whose target does not
// exist yet names what the agent can create: `~/p -> src/proj` with
// ~/p/bin on PATH before bin/ is built, `~/.local/bin/tool ->
// ~/src/tool/build/tool` after a make clean, dangling ~/.bash_aliases and
// ~/.gitconfig links into a dotfiles project; and the same through a link
// to a link. The project is not bound read-write, one line names the link
// and its target, and what the agent writes never reaches the host.
func TestDanglingLinksIntoProjectNotWritable(t *testing.T) {
	for _, tt := range []struct {
		name string
		// setup makes the links and returns the project, the files the
		// agent writes (relative to it) and what the line says it holds.
		setup func(t *testing.T, s *testutil.Sandbox) (dir string, writes []string, holds string)
		path  func(s *testutil.Sandbox) string
	}{
		{"PATH through a link", func(t *testing.T, s *testutil.Sandbox) (string, []string, string) {
			proj := filepath.Join(s.Home, "src", "proj")
			mkUserDir(t, s, proj)
			symlinkAsUser(t, s, "src/proj", filepath.Join(s.Home, "p"))
			return proj, []string{"bin/git"}, filepath.Join(proj, "bin") + " (the target of " + filepath.Join(s.Home, "p", "bin") + ")"
		}, func(s *testutil.Sandbox) string { return filepath.Join(s.Home, "p", "bin") }},
		{"PATH through a link to a link", func(t *testing.T, s *testutil.Sandbox) (string, []string, string) {
			proj := filepath.Join(s.Home, "src", "proj")
			mkUserDir(t, s, proj)
			symlinkAsUser(t, s, "src/proj", filepath.Join(s.Home, "p"))
			symlinkAsUser(t, s, filepath.Join(s.Home, "p"), filepath.Join(s.Home, "q"))
			return proj, []string{"bin/git"}, filepath.Join(proj, "bin") + " (the target of " + filepath.Join(s.Home, "q", "bin") + ")"
		}, func(s *testutil.Sandbox) string { return filepath.Join(s.Home, "q", "bin") }},
		{"a program of ~/.local/bin after make clean", func(t *testing.T, s *testutil.Sandbox) (string, []string, string) {
			proj := filepath.Join(s.Home, "src", "tool")
			mkUserDir(t, s, proj)
			bin := filepath.Join(s.Home, ".local", "bin")
			mkUserDir(t, s, bin)
			s.User.Chown(t, filepath.Dir(bin))
			symlinkAsUser(t, s, filepath.Join(proj, "build", "tool"), filepath.Join(bin, "tool"))
			return proj, []string{"build/tool"}, filepath.Join(proj, "build", "tool") + " (the target of " + filepath.Join(bin, "tool") + ", in your PATH directory " + bin + ")"
		}, func(s *testutil.Sandbox) string { return filepath.Join(s.Home, ".local", "bin") }},
		{"a program of ~/.local/bin through a link, after make clean", func(t *testing.T, s *testutil.Sandbox) (string, []string, string) {
			proj := filepath.Join(s.Home, "src", "tool")
			mkUserDir(t, s, proj)
			bin := filepath.Join(s.Home, ".local", "bin")
			mkUserDir(t, s, bin)
			s.User.Chown(t, filepath.Dir(bin))
			symlinkAsUser(t, s, "../src/tool/build/tool", filepath.Join(s.Home, ".local", "tool"))
			symlinkAsUser(t, s, "../tool", filepath.Join(bin, "tool"))
			return proj, []string{"build/tool"}, filepath.Join(proj, "build", "tool") + " (the target of " + filepath.Join(bin, "tool") + ", in your PATH directory " + bin + ")"
		}, func(s *testutil.Sandbox) string { return filepath.Join(s.Home, ".local", "bin") }},
		{"dangling dot-files into a dotfiles project", func(t *testing.T, s *testutil.Sandbox) (string, []string, string) {
			dots := filepath.Join(s.Home, "dotfiles")
			mkUserDir(t, s, dots)
			symlinkAsUser(t, s, "dotfiles/bash_aliases", filepath.Join(s.Home, ".bash_aliases"))
			symlinkAsUser(t, s, "dotfiles/gitconfig", filepath.Join(s.Home, ".gitconfig"))
			return dots, []string{"bash_aliases", "gitconfig"}, filepath.Join(dots, "bash_aliases") + " (the target of " + filepath.Join(s.Home, ".bash_aliases") + ")"
		}, nil},
		{"a dangling ~/.gitconfig through a link into a dotfiles project", func(t *testing.T, s *testutil.Sandbox) (string, []string, string) {
			dots := filepath.Join(s.Home, "dotfiles")
			mkUserDir(t, s, dots)
			mkUserDir(t, s, filepath.Join(s.Home, "links"))
			symlinkAsUser(t, s, "../dotfiles/gitconfig", filepath.Join(s.Home, "links", "gitconfig"))
			symlinkAsUser(t, s, "links/gitconfig", filepath.Join(s.Home, ".gitconfig"))
			return dots, []string{"gitconfig"}, filepath.Join(dots, "gitconfig") + " (the target of " + filepath.Join(s.Home, ".gitconfig") + ")"
		}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := testutil.NewSandbox(t)
			mkUserDir(t, s, filepath.Join(s.Home, "src"))
			dir, writes, holds := tt.setup(t, s)
			script := ""
			for _, w := range writes {
				script += "mkdir -p " + filepath.Dir(filepath.Join(dir, w)) + " && printf '#!/bin/sh\\necho pwned\\n' > " + filepath.Join(dir, w) + "; "
			}
			cmd := s.Command("--shell", "-c", script+`echo "rc=$?"`)
			cmd.Dir = dir
			path := "/usr/bin:/bin"
			if tt.path != nil {
				path = tt.path(s) + ":" + path
			}
			cmd.Env = append(cmd.Env, "PATH="+path)
			r := testutil.RunCommand(t, cmd)
			for _, w := range writes {
				if _, err := os.Lstat(filepath.Join(dir, w)); err == nil {
					t.Errorf("the sandbox made %s, which the host runs: %v", filepath.Join(dir, w), r)
				}
			}
			if want := hostRunsLine(dir, holds); !strings.Contains(r.Stderr, want) {
				t.Errorf("stderr lacks\n%s%v", want, r)
			}
		})
	}
}

// TestRootPathDirLinkIntoProject: a root-owned PATH directory outside the
// home (what sudo ln -s or sudo ln into /usr/local/bin gives) holding a
// link, or a hard link, to a project's build keeps the project from being
// bound read-write, whether the target exists or not; the line names the
// PATH entry. What the agent writes would run as root.
func TestRootPathDirLinkIntoProject(t *testing.T) {
	for _, tt := range []struct {
		name     string
		present  bool
		hardlink bool
	}{
		{"symlink, target present", true, false},
		{"symlink, target absent", false, false},
		{"hard link", true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := testutil.NewSandbox(t)
			proj := filepath.Join(s.Home, "src", "tool")
			mkUserDir(t, s, filepath.Dir(proj))
			mkUserDir(t, s, proj)
			built := filepath.Join(proj, "build", "tool")
			if tt.present {
				mkUserDir(t, s, filepath.Dir(built))
				writeUserFile(t, s, built, "#!/bin/sh\necho mine\n", 0o755)
			}
			// Root's, as /usr/local/bin is.
			sys := filepath.Join(filepath.Dir(s.Home), "usr-local-bin")
			if err := os.Mkdir(sys, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(sys) })
			link := filepath.Join(sys, "tool")
			holds := built + " (the target of " + link + ", in your PATH directory " + sys + ")"
			if tt.hardlink {
				if err := os.Link(built, link); err != nil {
					t.Fatal(err)
				}
				holds = "perhaps another name of " + link + " (found in " + sys + ", a file of 2 hard links on the project's file system: make it a plain file, cp " + link + " " + link + ".new && mv " + link + ".new " + link + ")"
			} else if err := os.Symlink(built, link); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(built)
			cmd := s.Command("--shell", "-c", "mkdir -p build && printf '#!/bin/sh\\necho pwned\\n' > build/tool.new && mv build/tool.new build/tool; echo \"rc=$?\"")
			cmd.Dir = proj
			cmd.Env = append(cmd.Env, "PATH="+sys+":/usr/bin:/bin")
			r := testutil.RunCommand(t, cmd)
			if after, _ := os.ReadFile(built); string(after) != string(before) {
				t.Errorf("the sandbox wrote %s, which root's PATH runs: %q (%v)", built, after, r)
			}
			if want := hostRunsLine(proj, holds); !strings.Contains(r.Stderr, want) {
				t.Errorf("stderr lacks\n%s%v", want, r)
			}
		})
	}
}

// TestHardlinksInRWTryMountKeepOtherProjects: with the shipped example
// `rw-try ~/.opam`, the agent hard-links two files inside ~/.opam. The
// scan for hard links does not read the places the sandbox writes: another
// project keeps its read-write bind.
func TestHardlinksInRWTryMountKeepOtherProjects(t *testing.T) {
	s := testutil.NewSandbox(t)
	mkUserDir(t, s, filepath.Join(s.Home, ".opam"))
	for _, p := range []string{"src", "src/a", "src/b"} {
		mkUserDir(t, s, filepath.Join(s.Home, p))
	}
	s.WriteConfig(t, "rw-try ~/.opam\n")
	cmd := s.Command("--shell", "-c", "mkdir -p ~/.opam/default/bin && echo x > ~/.opam/default/bin/ocaml && ln ~/.opam/default/bin/ocaml ~/.opam/default/bin/ocaml.opt && echo linked")
	cmd.Dir = filepath.Join(s.Home, "src", "a")
	if r := testutil.RunCommand(t, cmd); r.Stdout != "linked\n" {
		t.Fatalf("first session: %v", r)
	}
	if fi, err := os.Stat(filepath.Join(s.Home, ".opam", "default", "bin", "ocaml")); err != nil || fi.Sys().(*syscall.Stat_t).Nlink != 2 {
		t.Fatalf("no two hard links in ~/.opam: %v", err)
	}
	b := filepath.Join(s.Home, "src", "b")
	cmd = s.Command("--shell", "-c", "echo ok > f && cat f")
	cmd.Dir = b
	r := testutil.RunCommand(t, cmd)
	if r.Code != 0 || r.Stdout != "ok\n" || strings.Contains(r.Stderr, "hard links") {
		t.Errorf("want project %s bound read-write: %v", b, r)
	}
}
