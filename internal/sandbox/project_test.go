package sandbox

import (
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
)

func TestProject(t *testing.T) {
	tests := []struct {
		name   string
		pwd    string
		host   func(*fakeHost)
		config string
		path   string // the launcher's PATH, if not baseEnv's
		bindir string // the agent's directory, if not baseSpec's
		// launcher is the launcher's executable, if any.
		launcher string
		// env is one more variable of the launcher's environment.
		env string
		// want: the project bind ("" none), its kind, where it starts,
		// and the notice ("" none).
		want   string
		kind   bwrap.Kind
		chdir  string
		notice string
	}{
		{name: "working directory", pwd: "/home/u/projects/p",
			want: "/home/u/projects/p", kind: bwrap.Bind, chdir: "/home/u/projects/p"},
		{name: "git root above", pwd: "/home/u/projects/p/src/x", host: func(h *fakeHost) {
			h.files["/home/u/projects/p/.git"] = "d"
			h.files["/home/u/projects/p/src"] = "d"
			h.files["/home/u/projects/p/src/x"] = "d"
		}, want: "/home/u/projects/p", kind: bwrap.Bind, chdir: "/home/u/projects/p/src/x"},
		{name: "git file marks the root too", pwd: "/home/u/projects/p/src", host: func(h *fakeHost) {
			h.files["/home/u/projects/p/.git"] = "f"
			h.files["/home/u/projects/p/src"] = "d"
		}, want: "/home/u/projects/p", kind: bwrap.Bind, chdir: "/home/u/projects/p/src"},
		{name: "a repository in the home itself is not the project", pwd: "/home/u/projects/p", host: func(h *fakeHost) {
			h.files["/home/u/.git"] = "d"
		}, want: "/home/u/projects/p", kind: bwrap.Bind, chdir: "/home/u/projects/p"},
		{name: "project ro", pwd: "/home/u/projects/p", config: "project ro",
			want: "/home/u/projects/p", kind: bwrap.ROBind, chdir: "/home/u/projects/p"},
		{name: "project off", pwd: "/home/u/projects/p", config: "project off", chdir: "/home/u"},
		{name: "project off under a condition that holds", pwd: "/home/u/projects/p", config: "if pwd-under ~/projects\nproject off\nend", chdir: "/home/u"},
		{name: "project off under a condition that does not hold", pwd: "/home/u/projects/p", config: "if pwd-under ~/other\nproject off\nend",
			want: "/home/u/projects/p", kind: bwrap.Bind, chdir: "/home/u/projects/p"},
		{name: "the last project line wins", pwd: "/home/u/projects/p", config: "project off\nproject ro",
			want: "/home/u/projects/p", kind: bwrap.ROBind, chdir: "/home/u/projects/p"},
		{name: "home", pwd: "/home/u", chdir: "/home/u",
			notice: "the working directory /home/u is not visible in the sandbox: it is your home, which the sandbox never shows; start claude in a project directory below it"},
		{name: "root", pwd: "/", chdir: "/home/u",
			notice: "the working directory / is not visible in the sandbox: it holds your home, which the sandbox never shows; start claude in a project directory below your home"},
		{name: "above the home", pwd: "/home", chdir: "/home/u",
			notice: "the working directory /home is not visible in the sandbox: it holds your home, which the sandbox never shows; start claude in a project directory below your home"},
		{name: "etc", pwd: "/etc", chdir: "/home/u",
			notice: "the working directory /etc is not visible in the sandbox: it is not below your home; add `ro /etc` to ~/.claude-sandbox-init to show it"},
		{name: "outside the home", pwd: "/srv/x", host: func(h *fakeHost) { h.files["/srv"] = "d"; h.files["/srv/x"] = "d" }, chdir: "/home/u",
			notice: "the working directory /srv/x is not visible in the sandbox: it is not below your home; add `rw /srv/x` (or ro) to ~/.claude-sandbox-init to show it"},
		{name: "outside the home, shown by the config", pwd: "/var/lib", config: "ro /var/lib", chdir: "/var/lib"},
		{name: "dot-directory", pwd: "/home/u/.opam/x", host: func(h *fakeHost) { h.files["/home/u/.opam/x"] = "d" }, chdir: "/home/u",
			notice: "the working directory /home/u/.opam/x is not visible in the sandbox: it is in ~/.opam, which holds settings or secrets, not projects; add `ro /home/u/.opam/x` to ~/.claude-sandbox-init to show it"},
		{name: "sandbox home", pwd: "/home/u/.claude-home", chdir: "/home/u",
			notice: "the working directory /home/u/.claude-home is not visible in the sandbox: it is in the sandbox home /home/u/.claude-home, which is the home inside"},
		{name: "sandbox home elsewhere in the home", pwd: "/home/u/sbx/x", host: func(h *fakeHost) {
			h.files["/home/u/sbx"] = "d"
			h.files["/home/u/sbx/x"] = "d"
		}, config: "", chdir: "/home/u",
			notice: "the working directory /home/u/sbx/x is not visible in the sandbox: it is in the sandbox home /home/u/sbx, which is the home inside"},
		{name: "a directory of PATH in the project", pwd: "/home/u/projects", path: "/home/u/projects/p/bin:/usr/bin", chdir: "/home/u",
			notice: "the working directory /home/u/projects is not visible in the sandbox: its project /home/u/projects holds /home/u/projects/p/bin, which the host runs or reads; add `project ro` to ~/.claude-sandbox-init to show it read-only"},
		{name: "a directory of PATH in the project, read-only", pwd: "/home/u/projects", path: "/home/u/projects/p/bin:/usr/bin", config: "project ro",
			want: "/home/u/projects", kind: bwrap.ROBind, chdir: "/home/u/projects"},
		{name: "a relative directory in PATH", pwd: "/home/u/projects/p", path: ".:/usr/bin", chdir: "/home/u",
			notice: "the working directory /home/u/projects/p is not visible in the sandbox: its project /home/u/projects/p holds \".\" of your PATH (a relative directory), which the host runs or reads; add `project ro` to ~/.claude-sandbox-init to show it read-only"},
		{name: "the agent's directory in the project", pwd: "/home/u/projects", host: func(h *fakeHost) {
			h.files["/home/u/projects/p/bin"] = "d"
			h.files["/home/u/projects/p/bin/claude"] = "f"
		}, chdir: "/home/u", bindir: "/home/u/projects/p/bin",
			notice: "the working directory /home/u/projects is not visible in the sandbox: its project /home/u/projects holds /home/u/projects/p/bin, which the host runs or reads; add `project ro` to ~/.claude-sandbox-init to show it read-only"},
		{name: "the config file links into the project", pwd: "/home/u/projects/p", host: func(h *fakeHost) {
			h.files["/home/u/.claude-sandbox-init"] = "projects/p/init"
			h.files["/home/u/projects/p/init"] = "f"
		}, chdir: "/home/u",
			notice: "the working directory /home/u/projects/p is not visible in the sandbox: its project /home/u/projects/p holds /home/u/projects/p/init, which the host runs or reads; add `project ro` to ~/.claude-sandbox-init to show it read-only"},
		{name: "a dot-file links into the project", pwd: "/home/u/dotfiles", host: func(h *fakeHost) {
			h.files["/home/u/dotfiles"] = "d"
			h.files["/home/u/dotfiles/bashrc"] = "f"
			h.files["/home/u/.bashrc"] = "dotfiles/bashrc"
		}, chdir: "/home/u",
			notice: "the working directory /home/u/dotfiles is not visible in the sandbox: its project /home/u/dotfiles holds /home/u/dotfiles/bashrc (the target of /home/u/.bashrc), which the host runs or reads; add `project ro` to ~/.claude-sandbox-init to show it read-only"},
		{name: "an entry of ~/.config links into the project", pwd: "/home/u/dotfiles/nvim", host: func(h *fakeHost) {
			h.files["/home/u/dotfiles"] = "d"
			h.files["/home/u/dotfiles/.git"] = "d"
			h.files["/home/u/dotfiles/nvim"] = "d"
			h.files["/home/u/.config"] = "d"
			h.files["/home/u/.config/nvim"] = "../dotfiles/nvim"
		}, chdir: "/home/u",
			notice: "the working directory /home/u/dotfiles/nvim is not visible in the sandbox: its project /home/u/dotfiles holds /home/u/dotfiles/nvim (the target of /home/u/.config/nvim), which the host runs or reads; add `project ro` to ~/.claude-sandbox-init to show it read-only"},
		{name: "a dot-file links to a directory holding the project", pwd: "/home/u/dotfiles/config/git", host: func(h *fakeHost) {
			h.files["/home/u/dotfiles"] = "d"
			h.files["/home/u/dotfiles/config"] = "d"
			h.files["/home/u/dotfiles/config/git"] = "d"
			h.files["/home/u/.config"] = "dotfiles/config"
		}, chdir: "/home/u",
			notice: "the working directory /home/u/dotfiles/config/git is not visible in the sandbox: its project /home/u/dotfiles/config/git holds /home/u/dotfiles/config (the target of /home/u/.config), which the host runs or reads; add `project ro` to ~/.claude-sandbox-init to show it read-only"},
		{name: "a program of a PATH directory in the home links into the project", pwd: "/home/u/projects/p", path: "/home/u/.local/bin:/usr/bin", host: func(h *fakeHost) {
			h.files["/home/u/.local"] = "d"
			h.files["/home/u/.local/bin"] = "d"
			h.files["/home/u/.local/bin/tool"] = "/home/u/projects/p/build/tool"
			h.files["/home/u/projects/p/build"] = "d"
			h.files["/home/u/projects/p/build/tool"] = "f"
		}, chdir: "/home/u",
			notice: "the working directory /home/u/projects/p is not visible in the sandbox: its project /home/u/projects/p holds /home/u/projects/p/build/tool (the target of /home/u/.local/bin/tool, in your PATH directory /home/u/.local/bin), which the host runs or reads; add `project ro` to ~/.claude-sandbox-init to show it read-only"},
		{name: "the launcher in the project", pwd: "/home/u/projects/p", launcher: "/home/u/projects/p/build/claude-sandbox", host: func(h *fakeHost) {
			h.files["/home/u/projects/p/build"] = "d"
			h.files["/home/u/projects/p/build/claude-sandbox"] = "f"
		}, chdir: "/home/u",
			notice: "the working directory /home/u/projects/p is not visible in the sandbox: its project /home/u/projects/p holds /home/u/projects/p/build/claude-sandbox, which the host runs or reads; add `project ro` to ~/.claude-sandbox-init to show it read-only"},
		{name: "an entry of ~/.ssh links into the project", pwd: "/home/u/dotfiles", host: func(h *fakeHost) {
			h.files["/home/u/dotfiles"] = "d"
			h.files["/home/u/dotfiles/ssh_config"] = "f"
			h.files["/home/u/.ssh"] = "d"
			h.files["/home/u/.ssh/config"] = "../dotfiles/ssh_config"
		}, chdir: "/home/u",
			notice: "the working directory /home/u/dotfiles is not visible in the sandbox: its project /home/u/dotfiles holds /home/u/dotfiles/ssh_config (the target of /home/u/.ssh/config), which the host runs or reads; add `project ro` to ~/.claude-sandbox-init to show it read-only"},
		{name: "XDG_CONFIG_HOME in the project", pwd: "/home/u/dotfiles", env: "XDG_CONFIG_HOME=/home/u/dotfiles/config", host: func(h *fakeHost) {
			h.files["/home/u/dotfiles"] = "d"
			h.files["/home/u/dotfiles/config"] = "d"
		}, chdir: "/home/u",
			notice: "the working directory /home/u/dotfiles is not visible in the sandbox: its project /home/u/dotfiles holds /home/u/dotfiles/config, which the host runs or reads; add `project ro` to ~/.claude-sandbox-init to show it read-only"},
		{name: "the project in ZDOTDIR", pwd: "/home/u/zsh/plugins", env: "ZDOTDIR=/home/u/zsh", host: func(h *fakeHost) {
			h.files["/home/u/zsh"] = "d"
			h.files["/home/u/zsh/plugins"] = "d"
		}, chdir: "/home/u",
			notice: "the working directory /home/u/zsh/plugins is not visible in the sandbox: its project /home/u/zsh/plugins holds /home/u/zsh/plugins (in $ZDOTDIR /home/u/zsh), which the host runs or reads; add `project ro` to ~/.claude-sandbox-init to show it read-only"},
		{name: "BASH_ENV in the project", pwd: "/home/u/projects/p", env: "BASH_ENV=/home/u/projects/p/env.sh", chdir: "/home/u",
			notice: "the working directory /home/u/projects/p is not visible in the sandbox: its project /home/u/projects/p holds /home/u/projects/p/env.sh, which the host runs or reads; add `project ro` to ~/.claude-sandbox-init to show it read-only"},
		{name: "ZDOTDIR as the home changes nothing", pwd: "/home/u/projects/p", env: "ZDOTDIR=/home/u",
			want: "/home/u/projects/p", kind: bwrap.Bind, chdir: "/home/u/projects/p"},
		// What the kernel will reach, not what exists now: a link whose
		// target the agent can create counts as the target.
		{name: "a PATH entry through a link, before its directory is made", pwd: "/home/u/src/proj", path: "/home/u/p/bin:/usr/bin", host: func(h *fakeHost) {
			h.files["/home/u/src"] = "d"
			h.files["/home/u/src/proj"] = "d"
			h.files["/home/u/p"] = "src/proj"
		}, chdir: "/home/u",
			notice: "the working directory /home/u/src/proj is not visible in the sandbox: its project /home/u/src/proj holds /home/u/src/proj/bin (the target of /home/u/p/bin), which the host runs or reads; add `project ro` to ~/.claude-sandbox-init to show it read-only"},
		{name: "a PATH entry through links through links, before its directory is made", pwd: "/home/u/src/proj", path: "/home/u/q/bin:/usr/bin", host: func(h *fakeHost) {
			h.files["/home/u/src"] = "d"
			h.files["/home/u/src/proj"] = "d"
			h.files["/home/u/p"] = "src/proj"
			h.files["/home/u/q"] = "/home/u/p"
		}, chdir: "/home/u",
			notice: "the working directory /home/u/src/proj is not visible in the sandbox: its project /home/u/src/proj holds /home/u/src/proj/bin (the target of /home/u/q/bin), which the host runs or reads; add `project ro` to ~/.claude-sandbox-init to show it read-only"},
		{name: "a program of a PATH directory links to a build the project has not made", pwd: "/home/u/src/tool", path: "/home/u/.local/bin:/usr/bin", host: func(h *fakeHost) {
			h.files["/home/u/src"] = "d"
			h.files["/home/u/src/tool"] = "d"
			h.files["/home/u/.local"] = "d"
			h.files["/home/u/.local/bin"] = "d"
			h.files["/home/u/.local/bin/tool"] = "/home/u/src/tool/build/tool"
		}, chdir: "/home/u",
			notice: "the working directory /home/u/src/tool is not visible in the sandbox: its project /home/u/src/tool holds /home/u/src/tool/build/tool (the target of /home/u/.local/bin/tool, in your PATH directory /home/u/.local/bin), which the host runs or reads; add `project ro` to ~/.claude-sandbox-init to show it read-only"},
		{name: "a program of a PATH directory links through a link to a build the project has not made", pwd: "/home/u/src/tool", path: "/home/u/.local/bin:/usr/bin", host: func(h *fakeHost) {
			h.files["/home/u/src"] = "d"
			h.files["/home/u/src/tool"] = "d"
			h.files["/home/u/.local"] = "d"
			h.files["/home/u/.local/bin"] = "d"
			h.files["/home/u/.local/bin/tool"] = "../tool"
			h.files["/home/u/.local/tool"] = "../src/tool/build/tool"
		}, chdir: "/home/u",
			notice: "the working directory /home/u/src/tool is not visible in the sandbox: its project /home/u/src/tool holds /home/u/src/tool/build/tool (the target of /home/u/.local/bin/tool, in your PATH directory /home/u/.local/bin), which the host runs or reads; add `project ro` to ~/.claude-sandbox-init to show it read-only"},
		{name: "a link in a PATH directory through a link the project holds", pwd: "/home/u/src/tool", path: "/home/u/.local/bin:/usr/bin", host: func(h *fakeHost) {
			h.files["/home/u/src"] = "d"
			h.files["/home/u/src/tool"] = "d"
			h.files["/home/u/src/tool/env"] = "/usr/bin/env"
			h.files["/home/u/.local"] = "d"
			h.files["/home/u/.local/bin"] = "d"
			h.files["/home/u/.local/bin/x"] = "/home/u/src/tool/env"
		}, chdir: "/home/u",
			notice: "the working directory /home/u/src/tool is not visible in the sandbox: its project /home/u/src/tool holds /home/u/src/tool/env (a symlink on the way from /home/u/.local/bin/x, in your PATH directory /home/u/.local/bin), which the host runs or reads; add `project ro` to ~/.claude-sandbox-init to show it read-only"},
		{name: "dangling dot-files into a dotfiles project", pwd: "/home/u/dotfiles", host: func(h *fakeHost) {
			h.files["/home/u/dotfiles"] = "d"
			h.files["/home/u/.bash_aliases"] = "dotfiles/bash_aliases"
			h.files["/home/u/.gitconfig"] = "dotfiles/gitconfig"
		}, chdir: "/home/u",
			notice: "the working directory /home/u/dotfiles is not visible in the sandbox: its project /home/u/dotfiles holds /home/u/dotfiles/bash_aliases (the target of /home/u/.bash_aliases), which the host runs or reads; add `project ro` to ~/.claude-sandbox-init to show it read-only"},
		{name: "a dangling ~/.gitconfig through a link into a dotfiles project", pwd: "/home/u/dotfiles", host: func(h *fakeHost) {
			h.files["/home/u/dotfiles"] = "d"
			h.files["/home/u/links"] = "d"
			h.files["/home/u/links/gitconfig"] = "../dotfiles/gitconfig"
			h.files["/home/u/.gitconfig"] = "links/gitconfig"
		}, chdir: "/home/u",
			notice: "the working directory /home/u/dotfiles is not visible in the sandbox: its project /home/u/dotfiles holds /home/u/dotfiles/gitconfig (the target of /home/u/.gitconfig), which the host runs or reads; add `project ro` to ~/.claude-sandbox-init to show it read-only"},
		{name: "GIT_CONFIG_GLOBAL through a dangling link into the project", pwd: "/home/u/dotfiles", env: "GIT_CONFIG_GLOBAL=/home/u/cfg/git", host: func(h *fakeHost) {
			h.files["/home/u/dotfiles"] = "d"
			h.files["/home/u/cfg"] = "dotfiles"
		}, chdir: "/home/u",
			notice: "the working directory /home/u/dotfiles is not visible in the sandbox: its project /home/u/dotfiles holds /home/u/dotfiles/git (the target of /home/u/cfg/git), which the host runs or reads; add `project ro` to ~/.claude-sandbox-init to show it read-only"},
		{name: "a dot-file that cannot be resolved counts as inside", pwd: "/home/u/projects/p", host: func(h *fakeHost) {
			h.files["/home/u/.loop"] = ".loop"
		}, chdir: "/home/u",
			notice: "the working directory /home/u/projects/p is not visible in the sandbox: its project /home/u/projects/p holds perhaps /home/u/.loop (it cannot be resolved: too many levels of symbolic links; counted as inside), which the host runs or reads; add `project ro` to ~/.claude-sandbox-init to show it read-only"},
		// Every PATH directory, not only those of the home: what sudo ln -s
		// makes in /usr/local/bin runs as root.
		{name: "a link of a PATH directory outside the home into the project", pwd: "/home/u/src/tool", path: "/opt/tools:/usr/bin", host: func(h *fakeHost) {
			h.files["/home/u/src"] = "d"
			h.files["/home/u/src/tool"] = "d"
			h.files["/home/u/src/tool/build"] = "d"
			h.files["/home/u/src/tool/build/tool"] = "f"
			h.files["/opt/tools"] = "d"
			h.files["/opt/tools/tool"] = "/home/u/src/tool/build/tool"
		}, chdir: "/home/u",
			notice: "the working directory /home/u/src/tool is not visible in the sandbox: its project /home/u/src/tool holds /home/u/src/tool/build/tool (the target of /opt/tools/tool, in your PATH directory /opt/tools), which the host runs or reads; add `project ro` to ~/.claude-sandbox-init to show it read-only"},
		{name: "a dangling link of a PATH directory outside the home into the project", pwd: "/home/u/src/tool", path: "/opt/tools:/usr/bin", host: func(h *fakeHost) {
			h.files["/home/u/src"] = "d"
			h.files["/home/u/src/tool"] = "d"
			h.files["/opt/tools"] = "d"
			h.files["/opt/tools/tool"] = "/home/u/src/tool/build/tool"
		}, chdir: "/home/u",
			notice: "the working directory /home/u/src/tool is not visible in the sandbox: its project /home/u/src/tool holds /home/u/src/tool/build/tool (the target of /opt/tools/tool, in your PATH directory /opt/tools), which the host runs or reads; add `project ro` to ~/.claude-sandbox-init to show it read-only"},
		{name: "dot-files linking elsewhere, or to the home, are not the project's", pwd: "/home/u/projects/p", host: func(h *fakeHost) {
			h.files["/home/u/dotfiles"] = "d"
			h.files["/home/u/dotfiles/bashrc"] = "f"
			h.files["/home/u/.bashrc"] = "dotfiles/bashrc"
			h.files["/home/u/.self"] = "."
			h.files["/home/u/.root"] = "/"
		}, want: "/home/u/projects/p", kind: bwrap.Bind, chdir: "/home/u/projects/p"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := debianHost()
			if tt.host != nil {
				tt.host(h)
			}
			s := baseSpec()
			s.Pwd = tt.pwd
			if tt.name == "sandbox home elsewhere in the home" {
				s.SandboxHome = "/home/u/sbx"
			}
			if tt.bindir != "" {
				s.BinDir = tt.bindir
			}
			s.Launcher = tt.launcher
			if tt.path != "" {
				s.Environ = append(append([]string(nil), baseEnv...), "PATH="+tt.path)
			}
			if tt.env != "" {
				s.Environ = append(append([]string(nil), s.Environ...), tt.env)
			}
			s.Config = parseConfig(t, s, tt.config)
			l, err := Build(h, s)
			if err != nil {
				t.Fatal(err)
			}
			var got []bwrap.Op
			for _, o := range l.Plan.Ops {
				if o.Src == o.Dest && o.Dest != "" && strings.HasPrefix(o.Dest, "/home/u/") && !strings.HasPrefix(o.Dest, "/home/u/.claude-home") && !strings.Contains(o.Dest, "/.git") && o.Src != s.BinDir && !strings.HasPrefix(o.Origin, "toolchain") {
					got = append(got, o)
				}
			}
			switch {
			case tt.want == "" && len(got) > 0:
				t.Errorf("project bound: %v, want none", got)
			case tt.want != "" && (len(got) != 1 || got[0].Src != tt.want || got[0].Kind != tt.kind):
				t.Errorf("project binds %v, want one of kind %v of %s", got, tt.kind, tt.want)
			}
			if l.Plan.Chdir != tt.chdir {
				t.Errorf("starts in %s, want %s", l.Plan.Chdir, tt.chdir)
			}
			notice := ""
			for _, n := range l.Notices {
				if strings.Contains(n, "working directory") {
					notice = n
				}
			}
			if notice != tt.notice {
				t.Errorf("notice:\n%s\nwant:\n%s", notice, tt.notice)
			}
		})
	}
}
