//go:build linux

package claude_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// TestProjectHoldingWhatTheHostRunsNotWritable: an agent started in a
// dotfiles repository (whose files ~/.bashrc and ~/.config/X link to, or
// that $BASH_ENV names) or
// in the checkout the launcher itself was built in (linked from a PATH
// directory of the home) would append to what the user's shell, or the
// next `claude`, runs outside the sandbox. The project is then not bound,
// one line names the link, and the write never reaches the host.
func TestProjectHoldingWhatTheHostRunsNotWritable(t *testing.T) {
	s := testutil.NewSandbox(t)
	dots := filepath.Join(s.Home, "dotfiles")
	mkUserDir(t, s, dots)
	mkUserDir(t, s, filepath.Join(dots, ".git"))
	vim := filepath.Join(s.Home, "vimconf")
	mkUserDir(t, s, vim)
	writeUserFile(t, s, filepath.Join(dots, "bashrc"), "# mine\n", 0o644)
	mkUserDir(t, s, filepath.Join(s.Home, ".config"))
	tool := filepath.Join(s.Home, "src", "tool")
	mkUserDir(t, s, filepath.Join(s.Home, "src"))
	mkUserDir(t, s, tool)
	mkUserDir(t, s, filepath.Join(tool, "build"))
	// The launcher's binary, copied into the checkout, run through a
	// link in ~/.local/bin, which is in PATH.
	bin, err := os.ReadFile(testutil.Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	built := filepath.Join(tool, "build", "claude-sandbox")
	writeUserFile(t, s, built, string(bin), 0o755)
	localBin := filepath.Join(s.Home, ".local", "bin")
	mkUserDir(t, s, filepath.Dir(localBin))
	mkUserDir(t, s, localBin)
	links := map[string]string{
		filepath.Join(s.Home, ".bashrc"):      "dotfiles/bashrc",
		filepath.Join(s.Home, ".config/nvim"): "../vimconf",
		filepath.Join(localBin, "claude"):     built,
	}
	for link, target := range links {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		s.User.Chown(t, link)
	}

	shrc := filepath.Join(s.Home, "shellrc")
	mkUserDir(t, s, shrc)
	writeUserFile(t, s, filepath.Join(shrc, "env.sh"), "# mine\n", 0o644)
	tests := []struct {
		name, dir, launcher, victim, holds string
		env                                string
	}{
		{"BASH_ENV", shrc, "", filepath.Join(shrc, "env.sh"), filepath.Join(shrc, "env.sh"), "BASH_ENV=" + filepath.Join(shrc, "env.sh")},
		{"dot-file", dots, "", filepath.Join(dots, "bashrc"), filepath.Join(dots, "bashrc") + " (the target of " + filepath.Join(s.Home, ".bashrc") + ")", ""},
		{"config entry", vim, "", filepath.Join(vim, "init.lua"), vim + " (the target of " + filepath.Join(s.Home, ".config/nvim") + ")", ""},
		{"launcher", tool, filepath.Join(localBin, "claude"), built, built, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := os.ReadFile(tt.victim)
			// Replaced rather than written: the running launcher's
			// binary is busy.
			v := tt.victim
			cmd := s.Command("--shell", "-c", `echo 'cat ~/.ssh/id_ed25519' > `+v+`.new && mv `+v+`.new `+v+`; echo "rc=$?"`)
			if tt.launcher != "" {
				cmd.Path, cmd.Args[0] = tt.launcher, tt.launcher
			}
			cmd.Dir = tt.dir
			cmd.Env = append(cmd.Env, "PATH="+localBin+":/usr/bin:/bin")
			if tt.env != "" {
				cmd.Env = append(cmd.Env, tt.env)
			}
			r := testutil.RunCommand(t, cmd)
			after, _ := os.ReadFile(tt.victim)
			if string(after) != string(before) {
				t.Fatalf("the sandbox wrote %s, which the host runs: %v", tt.victim, r)
			}
			if r.Code != 0 || !strings.Contains(r.Stdout, "rc=1") || !strings.Contains(r.Stderr, "No such file or directory") {
				t.Errorf("want the write to fail inside (no project bound): %v", r)
			}
			want := "claude: the working directory " + tt.dir + " is not visible in the sandbox: its project " + tt.dir + " holds " + tt.holds + ", which the host runs or reads; add `project ro` to ~/.claude-sandbox-init to show it read-only\n"
			if !strings.Contains(r.Stderr, want) {
				t.Errorf("stderr lacks\n%s%v", want, r)
			}
		})
	}
}

// TestCheckoutsInAProjectReadOnly: claude started in ~/src, a directory of
// checkouts that is not one itself, makes all of ~/src the project. The
// agent must not be able to give ~/src/x or ~/src/y a core.fsmonitor that
// the user's next `git status` there runs; the submodule and linked
// worktree of ~/src/x are kept too; so they are after the agent made ~/src
// a checkout.
func TestCheckoutsInAProjectReadOnly(t *testing.T) {
	s := testutil.NewSandbox(t)
	x := gitProject(t, s)
	src := filepath.Dir(x)
	mkUserDir(t, s, src)
	y := filepath.Join(src, "y")
	mkUserDir(t, s, y)
	hostGit(t, s, y, "init", "-q")
	pwned := filepath.Join(testutil.PublicDir(t), "pwned")
	os.Chmod(filepath.Dir(pwned), 0o777)
	attack := func(repo string) {
		t.Helper()
		cmd := s.Command("--shell", "-c", `cd `+repo+` && git config core.fsmonitor "touch `+pwned+`"; echo "rc=$?"`)
		cmd.Dir = src
		r := testutil.RunCommand(t, cmd)
		if r.Code != 0 || strings.Contains(r.Stdout, "rc=0") || !strings.Contains(r.Stderr, "Read-only file system") {
			t.Errorf("%s: git config inside succeeded: %v", repo, r)
		}
		tryHostGit(t, s, repo, "status", "--short")
		if _, err := os.Stat(pwned); err == nil {
			t.Fatalf("%s: host git status ran the agent's core.fsmonitor", repo)
		}
	}
	for _, repo := range []string{x, y, filepath.Join(x, "lib", "sub"), filepath.Join(x, "wt", "feature")} {
		attack(repo)
	}
	// An agent makes ~/src a checkout, so that the next start takes it
	// for one.
	cmd := s.Command("--shell", "-c", "git init -q . && echo made")
	cmd.Dir = src
	if r := testutil.RunCommand(t, cmd); r.Stdout != "made\n" {
		t.Fatalf("git init in ~/src: %v", r)
	}
	attack(x)
	attack(y)
}

// TestLinkFromAnEarlierProjectRefused: an agent whose project was ~/src/p
// leaves ~/src/p/docs -> ~/.ssh. A later start elsewhere, whose config
// shows ~/src/p/docs read-only, must not follow the link: it would show
// the user's keys.
func TestLinkFromAnEarlierProjectRefused(t *testing.T) {
	s := testutil.NewSandbox(t)
	proj := filepath.Join(s.Home, "src", "p")
	mkUserDir(t, s, filepath.Dir(proj))
	mkUserDir(t, s, proj)
	mkUserDir(t, s, filepath.Join(s.Home, ".ssh"))
	writeUserFile(t, s, filepath.Join(s.Home, ".ssh", "id_ed25519"), "SECRET-KEY\n", 0o600)
	cmd := s.Command("--shell", "-c", "ln -s ../../.ssh docs && echo planted")
	cmd.Dir = proj
	if r := testutil.RunCommand(t, cmd); r.Stdout != "planted\n" {
		t.Fatalf("first session: %v", r)
	}
	s.WriteConfig(t, "ro ~/src/p/docs /docs\n")
	r := s.Shell(t, "cat /docs/id_ed25519")
	if strings.Contains(r.Stdout, "SECRET-KEY") {
		t.Fatalf("the link of an earlier project exposed ~/.ssh: %v", r)
	}
	want := "claude: ~/.claude-sandbox-init:1: ro: " + filepath.Join(proj, "docs") + " is a symlink in " + filepath.Join(s.Home, "src") + ", which an earlier sandbox may have written as its project: remove it (the agent may have made it) or name the real path\n"
	if r.Code != 2 || !strings.HasSuffix(r.Stderr, want) {
		t.Errorf("want exit 2 and\n%s%v", want, r)
	}
}
