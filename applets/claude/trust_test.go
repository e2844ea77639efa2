//go:build linux

package claude_test

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// TestConfigHardlinkRefused: a config file hard-linked from a dotfiles
// repository is written by an agent whose project is that repository (it
// appends `ro ~/.ssh ...`), and no symlink shows it: the start is refused.
func TestConfigHardlinkRefused(t *testing.T) {
	s := testutil.NewSandbox(t)
	dots := filepath.Join(s.Home, "dotfiles")
	mkUserDir(t, s, dots)
	s.WriteConfig(t, "# mine\n")
	cfg := filepath.Join(s.Home, ".claude-sandbox-init")
	if err := os.Link(cfg, filepath.Join(dots, "claude-sandbox-init")); err != nil {
		t.Fatal(err)
	}
	r := s.Shell(t, "echo started")
	want := "claude: ~/.claude-sandbox-init: the file has 2 hard links: another name of it may lie where the sandbox can write, and the agent could rewrite it there; make it a plain file: cp ~/.claude-sandbox-init ~/.claude-sandbox-init.new && mv ~/.claude-sandbox-init.new ~/.claude-sandbox-init\n"
	if r.Code != 2 || r.Stdout != "" || !strings.HasSuffix(r.Stderr, want) {
		t.Errorf("want exit 2 and\n%s%v", want, r)
	}
}

// TestHardlinkedDotfileKeepsProjectReadOnly: ~/.bashrc hard-linked from
// a dotfiles repository; an agent started in the repository would append
// to what the user's next shell runs. The project is not bound, one line
// names the file, and the write never reaches the host.
func TestHardlinkedDotfileKeepsProjectReadOnly(t *testing.T) {
	s := testutil.NewSandbox(t)
	dots := filepath.Join(s.Home, "dotfiles")
	mkUserDir(t, s, dots)
	mkUserDir(t, s, filepath.Join(dots, ".git"))
	victim := filepath.Join(dots, "bashrc")
	writeUserFile(t, s, victim, "# mine\n", 0o644)
	bashrc := filepath.Join(s.Home, ".bashrc")
	if err := os.Link(victim, bashrc); err != nil {
		t.Fatal(err)
	}
	cmd := s.Command("--shell", "-c", `echo 'cat ~/.ssh/id_ed25519' >> `+victim+`; echo "rc=$?"`)
	cmd.Dir = dots
	r := testutil.RunCommand(t, cmd)
	if got, _ := os.ReadFile(bashrc); string(got) != "# mine\n" {
		t.Fatalf("the sandbox wrote ~/.bashrc through its other name: %q (%v)", got, r)
	}
	if r.Code != 0 || strings.Contains(r.Stdout, "rc=0") || !strings.Contains(r.Stderr, "Directory nonexistent") && !strings.Contains(r.Stderr, "No such file or directory") {
		t.Errorf("want the write to fail inside (no project bound): %v", r)
	}
	want := "claude: the working directory " + dots + " is not visible in the sandbox: its project " + dots + " holds perhaps another name of " + bashrc +
		" (found in " + s.Home + ", a file of 2 hard links on the project's file system: make it a plain file, cp " + bashrc + " " + bashrc + ".new && mv " + bashrc + ".new " + bashrc +
		"), which the host runs or reads; add `project ro` to ~/.claude-sandbox-init to show it read-only\n"
	if !strings.Contains(r.Stderr, want) {
		t.Errorf("stderr lacks\n%s%v", want, r)
	}
}

// TestPwdUnderNotSteered: with `if pwd-under ~/src/mono/services/payments`
// showing ~/.ssh, an agent in ~/src/mono replaces services/payments with
// a link to the home; the next start in another project must not take
// itself for one below it.
func TestPwdUnderNotSteered(t *testing.T) {
	s := testutil.NewSandbox(t)
	mkUserDir(t, s, filepath.Join(s.Home, ".ssh"))
	writeUserFile(t, s, filepath.Join(s.Home, ".ssh", "id_ed25519"), "SECRET-KEY\n", 0o600)
	mono := filepath.Join(s.Home, "src", "mono")
	payments := filepath.Join(mono, "services", "payments")
	for _, d := range []string{filepath.Dir(mono), mono, filepath.Dir(payments), payments, filepath.Join(payments, "api")} {
		mkUserDir(t, s, d)
	}
	other := filepath.Join(s.Home, "src", "other")
	mkUserDir(t, s, other)
	s.WriteConfig(t, "if pwd-under ~/src/mono/services/payments\n  ro ~/.ssh\nend\n")

	// Control: below the directory, the block applies.
	cmd := s.Command("--shell", "-c", "cat ~/.ssh/id_ed25519")
	cmd.Dir = filepath.Join(payments, "api")
	if r := testutil.RunCommand(t, cmd); r.Stdout != "SECRET-KEY\n" {
		t.Fatalf("control: in payments, ~/.ssh not shown: %v", r)
	}
	cmd = s.Command("--shell", "-c", "rm -r services/payments && ln -s ../../.. services/payments && echo planted")
	cmd.Dir = mono
	if r := testutil.RunCommand(t, cmd); r.Stdout != "planted\n" {
		t.Fatalf("planting the link: %v", r)
	}
	cmd = s.Command("--shell", "-c", "cat ~/.ssh/id_ed25519; echo rc=$?")
	cmd.Dir = other
	r := testutil.RunCommand(t, cmd)
	if strings.Contains(r.Stdout, "SECRET-KEY") {
		t.Fatalf("the planted link made another project take itself for payments: %v", r)
	}
	want := "claude: ~/.claude-sandbox-init:1: pwd-under: " + payments + " is reached through the symlink " + payments + " in " + filepath.Join(s.Home, "src") +
		", which the sandbox can write: not followed (the condition is false); name the real directory\n"
	if r.Code != 0 || !strings.Contains(r.Stdout, "rc=1") || !strings.Contains(r.Stderr, want) {
		t.Errorf("want ~/.ssh hidden and\n%s%v", want, r)
	}
}

// TestCraftedGitIndexRefused: the project holds a nested repository
// sub/.git whose index is a 2.6 MB version 4 index with names growing by a
// byte per entry (gitlinks, with the 0xfff length flag), as a session
// still running can write into a repository it made (the exit pass makes
// those inert only when that session ends). The next start reads it before
// any slice limit applies: it is refused, naming the file to remove,
// instead of taking gigabytes.
func TestCraftedGitIndexRefused(t *testing.T) {
	s := testutil.NewSandbox(t)
	proj := filepath.Join(s.Home, "src", "x")
	mkUserDir(t, s, filepath.Dir(proj))
	mkUserDir(t, s, proj)
	mkUserDir(t, s, filepath.Join(proj, "sub"))
	mkUserDir(t, s, filepath.Join(proj, "sub", ".git"))
	b := []byte("DIRC\x00\x00\x00\x04")
	const n = 40000
	b = binary.BigEndian.AppendUint32(b, n)
	for i := 0; i < n; i++ {
		var e [62]byte
		binary.BigEndian.PutUint32(e[24:], 0o160000)
		binary.BigEndian.PutUint16(e[60:], 0xfff)
		b = append(append(b, e[:]...), 0, 'a'+byte(i%26), 0)
	}
	index := filepath.Join(proj, "sub", ".git", "index")
	writeUserFile(t, s, index, string(append(b, make([]byte, 20)...)), 0o644)
	cmd := s.Command("--shell", "-c", "echo started")
	cmd.Dir = proj
	r := testutil.RunCommand(t, cmd)
	want := "claude: " + index + ": malformed git index: entry 4095 has a name longer than 4095 bytes: remove this file (in a repository of yours, git reset makes it anew)\n"
	if r.Code != 1 || r.Stdout != "" || !strings.HasSuffix(r.Stderr, want) {
		t.Errorf("want exit 1 and\n%s%v", want, r)
	}
}
