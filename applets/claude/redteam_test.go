//go:build linux

package claude_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// TestRedteamToolchainLinkFromEarlierProject performs the attack: the agent
// in project A replaces ~/a/bin with a symlink to project B, which holds a
// secret; later the user puts ~/a/bin on PATH. The next session, in
// project C, must not show project B: the link lies where an
// earlier sandbox wrote, and a bind source reached through it is refused
// (as it is for a `ro` line), never resolved and bound by its target.
func TestRedteamToolchainLinkFromEarlierProject(t *testing.T) {
	s := testutil.NewSandbox(t)
	m := marker(t)
	a, b, c := filepath.Join(s.Home, "a"), filepath.Join(s.Home, "b"), filepath.Join(s.Home, "c")
	for _, d := range []string{a, filepath.Join(a, "bin"), b, c} {
		mkUserDir(t, s, d)
	}
	writeUserFile(t, s, filepath.Join(b, "secret"), "SECRET-"+m+"\n", 0o600)
	// The earlier session, in project A, before the user put ~/a/bin on
	// PATH, plants the link.
	mustOK(t, shellIn(t, s, a, `rm -rf bin && ln -s `+b+` bin`))

	s.Env = append(s.Env, "PATH="+filepath.Join(a, "bin")+":/usr/bin:/bin")
	r := shellIn(t, s, c, `cat `+b+`/secret; echo rc=$?`)
	if strings.Contains(r.Stdout+r.Stderr, "SECRET-"+m) {
		t.Errorf("project B's file is readable in project C through a link project A planted in PATH:\n%v", r)
	}
}

// TestRedteamGitConfigCommandKeys performs the attack: the user's
// ~/.gitconfig names commands relative to the top of the work tree under
// keys that run them (the kernel's `sendemail.tocmd =
// scripts/get_maintainer.pl` is the documented example). The agent writes
// those scripts in the project; the host's `git send-email`, `git
// submodule update`, git-lfs and `git gui` would run them. Each must be
// read-only inside, as diff.external's is.
func TestRedteamGitConfigCommandKeys(t *testing.T) {
	testutil.RequireCommand(t, "git")
	for _, tt := range []struct{ name, config, script string }{
		{"diff.external", "[diff]\n\texternal = scripts/difftool\n", "scripts/difftool"},
		{"sendemail.tocmd", "[sendemail]\n\ttocmd = scripts/get_maintainer.pl\n", "scripts/get_maintainer.pl"},
		{"sendemail.cccmd", "[sendemail]\n\tcccmd = scripts/cc.sh\n", "scripts/cc.sh"},
		{"sendemail.headercmd", "[sendemail]\n\theadercmd = scripts/hdr.sh\n", "scripts/hdr.sh"},
		{"submodule.update", "[submodule \"lib/sub\"]\n\tupdate = !scripts/update.sh\n", "scripts/update.sh"},
		{"guitool.cmd", "[guitool \"lint\"]\n\tcmd = scripts/lint.sh\n", "scripts/lint.sh"},
		{"lfs.customtransfer.path", "[lfs \"customtransfer.x\"]\n\tpath = scripts/xfer.sh\n", "scripts/xfer.sh"},
		{"init.templatedir", "[init]\n\ttemplateDir = " + "TEMPLATES" + "\n", "templates/hooks/post-checkout"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := testutil.NewSandbox(t)
			proj := gitProject(t, s)
			mkUserDir(t, s, filepath.Join(proj, "scripts"))
			cfg := strings.ReplaceAll(tt.config, "TEMPLATES", filepath.Join(proj, "templates"))
			writeUserFile(t, s, filepath.Join(s.Home, ".gitconfig"), cfg, 0o644)
			cmd := s.Command("--shell", "-c", `mkdir -p $(dirname `+tt.script+`) && printf '#!/bin/sh\necho planted\n' > `+tt.script+`; echo rc=$?`)
			cmd.Dir = proj
			r := testutil.RunCommand(t, cmd)
			if r.Code == 0 && strings.Contains(r.Stdout, "rc=0") {
				t.Errorf("%s names %s, and the sandbox wrote it:\n%v", tt.name, tt.script, r)
			} else if !strings.Contains(r.Stderr, "where the sandbox can write") && !strings.Contains(r.Stderr, "Read-only file system") {
				t.Errorf("want the start refused, naming the setting, or the file read-only: %v", r)
			}
		})
	}
}

// TestRedteamDefaultACLOpensProjectToOthers performs the attack: the agent
// sets a default POSIX ACL on the project root (setfacl -d -m o::rwx .,
// system.posix_acl_default, which the owner may set without a capability).
// The root's mode does not change, so the restore at exit sees nothing; but
// every file and directory the user makes in the project afterwards on the
// host is writable by every local user (a default ACL overrides the
// umask). The entry must not survive the session, or the start must be
// refused. (A named-user entry, u:nobody:rwx, fails inside with EINVAL:
// only the user's own ids are mapped.)
func TestRedteamDefaultACLOpensProjectToOthers(t *testing.T) {
	testutil.RequireCommand(t, "setfacl")
	s := testutil.NewSandbox(t)
	proj := filepath.Join(s.Home, "p")
	mkUserDir(t, s, proj)
	r := shellIn(t, s, proj, `setfacl -d -m o::rwx,m::rwx,g::rwx . && echo acl-set`)
	if !strings.Contains(r.Stdout, "acl-set") {
		t.Logf("setfacl inside failed: %v", r)
	}
	// The user, on the host, later makes a directory in the project.
	cmd := s.User.Command(s.Home, "sh", "-c", "umask 022 && mkdir "+proj+"/build && stat -c %a "+proj+"/build")
	out := testutil.RunCommand(t, cmd)
	if strings.TrimSpace(out.Stdout) == "777" {
		t.Errorf("a directory the user made on the host after the session is world-writable (mode %s): the default ACL the agent set on the project root survived", strings.TrimSpace(out.Stdout))
	}
}

// TestRedteamToolchainGlobalNpmrcToken performs the attack: `npm config set
// --global //registry.npmjs.org/:_authToken=...` writes the token to
// PREFIX/etc/npmrc, inside the nvm version directory that is bound whole as
// the toolchain. The docs promise the token is left out (only the
// registry settings come along, as variables); the agent must not be able
// to read the file.
func TestRedteamToolchainGlobalNpmrcToken(t *testing.T) {
	s := testutil.NewSandbox(t)
	token := "tok-" + marker(t)
	v := filepath.Join(s.Home, ".nvm", "versions", "node", "v20.11.0")
	for _, d := range []string{".nvm", ".nvm/versions", ".nvm/versions/node", ".nvm/versions/node/v20.11.0", ".nvm/versions/node/v20.11.0/bin", ".nvm/versions/node/v20.11.0/etc"} {
		mkUserDir(t, s, filepath.Join(s.Home, d))
	}
	writeUserFile(t, s, filepath.Join(v, "bin", "node"), "#!/bin/sh\necho node\n", 0o755)
	writeUserFile(t, s, filepath.Join(v, "bin", "npm"), "#!/bin/sh\necho npm\n", 0o755)
	writeUserFile(t, s, filepath.Join(v, "etc", "npmrc"), "registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken="+token+"\n", 0o600)
	s.Env = append(s.Env, "PATH="+filepath.Join(v, "bin")+":/usr/bin:/bin")
	r := s.Shell(t, `node; env | grep -i npm_config; cat `+v+`/etc/npmrc; echo rc=$?`)
	if !strings.Contains(r.Stdout, "node") {
		t.Fatalf("the nvm toolchain is not shown: %v", r)
	}
	if strings.Contains(r.Stdout+r.Stderr, token) {
		t.Errorf("the npm token in the toolchain's global npmrc is readable inside:\n%v", r)
	}
}

// TestRedteamHardlinkedStartupFileDeeper performs the attack: a dotfiles
// repository hard-links files the user's editor or shell runs at start,
// deeper than the scan looks (only the home's own dot-files, ~/.config one
// level down, ~/.ssh, ~/.gnupg, ~/.local/bin): ~/.emacs.d/init.el,
// ~/.vim/plugin/x.vim, ~/.config/fish/conf.d/x.fish, ~/.config/systemd/user
// units. The agent, whose project is the repository, writes the file; the
// host runs it next. Each must keep the project from read-write, as a
// hard-linked ~/.bashrc does.
func TestRedteamHardlinkedStartupFileDeeper(t *testing.T) {
	for _, rel := range []string{".emacs.d/init.el", ".vim/plugin/x.vim", ".config/fish/conf.d/x.fish", ".config/systemd/user/x.service"} {
		t.Run(rel, func(t *testing.T) {
			s := testutil.NewSandbox(t)
			dots := filepath.Join(s.Home, "dotfiles")
			mkUserDir(t, s, dots)
			victim := filepath.Join(dots, "victim")
			writeUserFile(t, s, victim, "# mine\n", 0o644)
			host := filepath.Join(s.Home, rel)
			for d := filepath.Dir(host); d != s.Home; d = filepath.Dir(d) {
				mkUserDir(t, s, d)
			}
			if err := os.Link(victim, host); err != nil {
				t.Fatal(err)
			}
			cmd := s.Command("--shell", "-c", `echo 'planted' >> `+victim+`; echo "rc=$?"`)
			cmd.Dir = dots
			r := testutil.RunCommand(t, cmd)
			if got, _ := os.ReadFile(host); string(got) != "# mine\n" {
				t.Errorf("the sandbox wrote ~/%s through its other name: %q\n%v", rel, got, r)
			}
		})
	}
}

// TestRedteamGitConfigFromEnvironment performs the attack: the user's
// shell sets git config through the environment (GIT_CONFIG_COUNT with
// GIT_CONFIG_KEY_0/GIT_CONFIG_VALUE_0, or GIT_CONFIG_PARAMETERS, as `git
// -c` does), here core.hooksPath=.githooks, relative to the work tree. The
// launcher reads ~/.gitconfig and $GIT_CONFIG_GLOBAL but not these; the
// agent writes .githooks/pre-commit and the user's next host `git commit`
// runs it. The hooks directory must be read-only inside, as it is when
// ~/.gitconfig names it.
func TestRedteamGitConfigFromEnvironment(t *testing.T) {
	testutil.RequireCommand(t, "git")
	for _, tt := range []struct {
		name string
		env  []string
	}{
		{"~/.gitconfig", nil},
		{"GIT_CONFIG_COUNT", []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.hooksPath", "GIT_CONFIG_VALUE_0=.githooks"}},
		{"GIT_CONFIG_PARAMETERS", []string{"GIT_CONFIG_PARAMETERS='core.hooksPath'='.githooks'"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := testutil.NewSandbox(t)
			proj := gitProject(t, s)
			mkUserDir(t, s, filepath.Join(proj, ".githooks"))
			if tt.env == nil {
				writeUserFile(t, s, filepath.Join(s.Home, ".gitconfig"), "[core]\n\thooksPath = .githooks\n", 0o644)
			}
			s.Env = append(s.Env, tt.env...)
			cmd := s.Command("--shell", "-c", `printf '#!/bin/sh\necho planted\n' > .githooks/pre-commit; echo rc=$?`)
			cmd.Dir = proj
			r := testutil.RunCommand(t, cmd)
			if r.Code == 0 && strings.Contains(r.Stdout, "rc=0") {
				t.Errorf("%s names .githooks as core.hooksPath, and the sandbox wrote a hook there:\n%v", tt.name, r)
			}
		})
	}
}
