//go:build linux

package claude_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// hostGit runs git as the test user on the host, in dir, with no system
// or global config, and fails the test if it fails.
func hostGit(t *testing.T, s *testutil.Sandbox, dir string, args ...string) string {
	t.Helper()
	r, ok := tryHostGit(t, s, dir, args...)
	if !ok {
		t.FailNow()
	}
	return r
}

// tryHostGit is hostGit, going on after a failure.
func tryHostGit(t *testing.T, s *testutil.Sandbox, dir string, args ...string) (string, bool) {
	t.Helper()
	cmd := s.User.Command(s.Home, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(cmd.Env, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=u", "GIT_AUTHOR_EMAIL=u@example.com", "GIT_COMMITTER_NAME=u", "GIT_COMMITTER_EMAIL=u@example.com")
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("host git %s: %v", strings.Join(args, " "), err)
		return "", false
	}
	r := testutil.RunCommand(t, cmd)
	if r.Code != 0 {
		t.Errorf("host git %s in %s: %v", strings.Join(args, " "), dir, r)
		return r.Stdout, false
	}
	return r.Stdout, true
}

// gitProject makes ~/src/x, a repository with a file, a commit, a
// submodule at lib/sub, a branch "other" and a linked worktree at
// wt/feature, as the user on the host.
func gitProject(t *testing.T, s *testutil.Sandbox) string {
	t.Helper()
	up := filepath.Join(s.Home, "upstream")
	proj := filepath.Join(s.Home, "src", "x")
	mkUserDir(t, s, up)
	mkUserDir(t, s, proj)
	writeUserFile(t, s, filepath.Join(up, "f"), "up\n", 0o644)
	hostGit(t, s, up, "init", "-q")
	hostGit(t, s, up, "add", "f")
	hostGit(t, s, up, "commit", "-qm", "up")
	writeUserFile(t, s, filepath.Join(proj, "file"), "one\n", 0o644)
	hostGit(t, s, proj, "init", "-q")
	hostGit(t, s, proj, "add", "file")
	hostGit(t, s, proj, "-c", "protocol.file.allow=always", "submodule", "add", "-q", up, "lib/sub")
	hostGit(t, s, proj, "commit", "-qm", "one")
	hostGit(t, s, proj, "branch", "other")
	hostGit(t, s, proj, "worktree", "add", "-q", "-b", "feature", "wt/feature")
	return proj
}

// The directories bound onto themselves to keep a submodule's parents
// from being renamed must not undo the config's mounts below them.
func TestGitProtectionKeepsConfigMounts(t *testing.T) {
	testutil.RequireCommand(t, "git")
	s := testutil.NewSandbox(t)
	proj := gitProject(t, s)
	mkUserDir(t, s, filepath.Join(proj, "lib", "sub", "cache"))
	writeUserFile(t, s, filepath.Join(proj, "lib", "sub", "cache", "bait"), "b", 0o644)
	s.WriteConfig(t, "tmpfs ~/src/x/lib/sub/cache\n")
	cmd := s.Command("--shell", "-c", `ls -A lib/sub/cache; echo end; mv -T lib lib-old`)
	cmd.Dir = proj
	r := testutil.RunCommand(t, cmd)
	if want := "end\n"; r.Stdout != want || !strings.Contains(r.Stderr, "mv: cannot move 'lib' to 'lib-old': Device or resource busy") {
		t.Errorf("inside: want the tmpfs of the config over lib/sub/cache (stdout %q) and lib pinned: %v", want, r)
	}
}

// TestGitCannotBeTurnedAgainstTheHost plants, from inside, everything host
// git would execute or read as configuration in the project's repository
// and its submodule and linked worktree, checks that each planting fails with the errno the
// mounts give, then runs git status, commit and checkout as the user on
// the host and checks that nothing planted ran.
func TestGitCannotBeTurnedAgainstTheHost(t *testing.T) {
	testutil.RequireCommand(t, "git")
	for _, tt := range []struct{ name, config string }{
		{"default project", ""},
		// The way earlier versions documented: a rw bind of $PWD.
		{"rw bind in the config", "if pwd-under ~/src\n  rw $PWD\n  chdir $PWD\nend\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := testutil.NewSandbox(t)
			markers := filepath.Join(s.Home, "markers")
			mkUserDir(t, s, markers)
			proj := gitProject(t, s)
			if tt.config != "" {
				s.WriteConfig(t, tt.config)
			}

			// Material the agent prepares in the project (which it
			// can write): hooks, configs and git directories of its
			// own.
			script := `set -u
hook() { printf '#!/bin/sh\ntouch ` + markers + `/%s\n' "$1" > "$2"; chmod +x "$2"; }
step() { echo "== $1"; shift; "$@" 2>&1; echo "rc=$?"; }
mkdir evil-hooks
for h in pre-commit post-commit post-checkout; do hook hooksPath-$h evil-hooks/$h; hook hook-$h evil-hooks/hook-$h; done
printf '[core]\n\tfsmonitor = touch ` + markers + `/include\n' > evil.cfg
cp -r .git evil-git && git config --file evil-git/config core.fsmonitor 'touch ` + markers + `/new-git'
cp -r .git/modules/lib/sub evil-sub-git && git config --file evil-sub-git/config core.fsmonitor 'touch ` + markers + `/sub-gitfile'
printf 'gitdir: ../../evil-sub-git\n' > evil-gitfile
cp -r .git evil-wt-git && git config --file evil-wt-git/config core.fsmonitor 'touch ` + markers + `/wt-gitfile'
printf 'gitdir: ../../evil-wt-git\n' > evil-wt-gitfile
printf '../evil-git\n' > evil-commondir
echo two > file
step fsmonitor git config core.fsmonitor 'touch ` + markers + `/fsmonitor'
step hooksPath git config core.hooksPath "$PWD/evil-hooks"
step include git config include.path ../evil.cfg
step config-copy cp evil.cfg .git/config
step hook cp evil-hooks/hook-post-checkout .git/hooks/post-checkout
step hooks-dir mv -T .git/hooks .git/hooks-old
step commondir cp evil-commondir .git/commondir
step config.worktree cp evil.cfg .git/config.worktree
step info touch .git/info/attributes
step sub-config git -C lib/sub config core.fsmonitor 'touch ` + markers + `/sub-config'
step sub-hook cp evil-hooks/hook-post-checkout .git/modules/lib/sub/hooks/post-checkout
step sub-gitfile cp evil-gitfile lib/sub/.git
step sub-gitfile-rename mv -T lib/sub/.git lib/sub/.git-old
step sub-rename mv -T lib/sub lib/sub-old
step sub-parent-rename mv -T lib lib-old
step wt-gitfile cp evil-wt-gitfile wt/feature/.git
step wt-rename mv -T wt wt-old
step new-git mv -T .git .git-old
step new-git-over mv -T evil-git .git
step project-rename mv -T "$PWD" "$PWD-old"
step commit git commit -qam inside
`
			cmd := s.Command("--shell", "-c", script)
			cmd.Dir = proj
			r := testutil.RunCommand(t, cmd)
			mustOK(t, r)
			const erofs, ebusy = "Read-only file system", "Device or resource busy"
			want := strings.Join([]string{
				"== fsmonitor", "error: could not lock config file .git/config: " + erofs, "rc=255",
				"== hooksPath", "error: could not lock config file .git/config: " + erofs, "rc=255",
				"== include", "error: could not lock config file .git/config: " + erofs, "rc=255",
				"== config-copy", "cp: cannot create regular file '.git/config': " + erofs, "rc=1",
				"== hook", "cp: cannot create regular file '.git/hooks/post-checkout': " + erofs, "rc=1",
				"== hooks-dir", "mv: cannot move '.git/hooks' to '.git/hooks-old': " + erofs, "rc=1",
				"== commondir", "cp: cannot create regular file '.git/commondir': " + erofs, "rc=1",
				"== config.worktree", "cp: cannot create regular file '.git/config.worktree': " + erofs, "rc=1",
				"== info", "touch: cannot touch '.git/info/attributes': " + erofs, "rc=1",
				"== sub-config", "error: could not lock config file " + proj + "/.git/modules/lib/sub/config: " + erofs, "rc=255",
				"== sub-hook", "cp: cannot create regular file '.git/modules/lib/sub/hooks/post-checkout': " + erofs, "rc=1",
				"== sub-gitfile", "cp: cannot create regular file 'lib/sub/.git': " + erofs, "rc=1",
				"== sub-gitfile-rename", "mv: cannot move 'lib/sub/.git' to 'lib/sub/.git-old': " + ebusy, "rc=1",
				"== sub-rename", "mv: cannot move 'lib/sub' to 'lib/sub-old': " + ebusy, "rc=1",
				"== sub-parent-rename", "mv: cannot move 'lib' to 'lib-old': " + ebusy, "rc=1",
				"== wt-gitfile", "cp: cannot create regular file 'wt/feature/.git': " + erofs, "rc=1",
				"== wt-rename", "mv: cannot move 'wt' to 'wt-old': " + ebusy, "rc=1",
				"== new-git", "mv: cannot move '.git' to '.git-old': " + ebusy, "rc=1",
				"== new-git-over", "mv: cannot move 'evil-git' to '.git': " + ebusy, "rc=1",
				"== project-rename", "mv: cannot move '" + proj + "' to '" + proj + "-old': " + ebusy, "rc=1",
				"== commit", "fatal: Unable to create '" + proj + "/.git/index.lock': " + erofs, "rc=128",
			}, "\n") + "\n"
			if r.Stdout != want {
				t.Errorf("planting from inside:\n%s\nwant:\n%s\n(%v)", r.Stdout, want, r)
			}

			// The user's git on the host.
			tryHostGit(t, s, proj, "status")
			tryHostGit(t, s, filepath.Join(proj, "lib", "sub"), "status")
			tryHostGit(t, s, proj, "commit", "-qam", "two")
			tryHostGit(t, s, proj, "checkout", "-q", "other")
			tryHostGit(t, s, proj, "checkout", "-q", "-")
			tryHostGit(t, s, proj, "submodule", "status")
			tryHostGit(t, s, filepath.Join(proj, "wt", "feature"), "status")
			if got, _ := tryHostGit(t, s, proj, "log", "--format=%s"); got != "two\none\n" {
				t.Errorf("host git log = %q, want the host's commits only", got)
			}
			ents, err := os.ReadDir(markers)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				t.Errorf("host git ran what the sandbox planted: marker %s", e.Name())
			}
		})
	}

	// What the repository's config names, and where .git's links
	// point, lies in the work tree: each is read-only inside.
	const erofs = "Read-only file system"
	for _, tt := range []struct {
		name string
		// setup prepares the repository on the host.
		setup   func(t *testing.T, s *testutil.Sandbox, proj string)
		plant   string // the agent's steps (evil-hook and evil.cfg are at hand)
		want    []string
		hostGit [][]string
	}{
		{"husky", func(t *testing.T, s *testutil.Sandbox, proj string) {
			mkUserDir(t, s, filepath.Join(proj, ".husky", "_"))
			writeUserFile(t, s, filepath.Join(proj, ".husky", "_", ".gitignore"), "*\n", 0o644)
			hostGit(t, s, proj, "config", "core.hooksPath", ".husky/_")
			// The linked worktree shares the config, and git run
			// there looks for its own .husky/_, which the agent could
			// make: refused until it exists.
			cmd := s.Command("--shell", "-c", "echo started")
			cmd.Dir = proj
			r := testutil.RunCommand(t, cmd)
			feature := filepath.Join(proj, "wt", "feature")
			want := "claude: core.hookspath in " + proj + "/.git/config:6 names " + feature + "/.husky/_, which does not exist in " + proj +
				", where the sandbox can write: create it on the host (an empty file or directory does) or remove the setting; or add `project ro` in ~/.claude-sandbox-init\n"
			if r.Code != 1 || r.Stdout != "" || !strings.HasSuffix(r.Stderr, want) {
				t.Errorf("want exit 1 and\n%s%v", want, r)
			}
			mkUserDir(t, s, filepath.Join(feature, ".husky"))
			mkUserDir(t, s, filepath.Join(feature, ".husky", "_"))
		}, "step hook cp evil-hook .husky/_/pre-commit\nstep husky-hook cp evil-hook .husky/pre-commit\nstep status git status --short .husky\n",
			[]string{
				"== hook", "cp: cannot create regular file '.husky/_/pre-commit': " + erofs, "rc=1",
				"== husky-hook", "cp: cannot create regular file '.husky/pre-commit': " + erofs, "rc=1",
				"== status", "rc=0",
			}, [][]string{{"commit", "-qam", "two"}}},
		{"include", func(t *testing.T, s *testutil.Sandbox, proj string) {
			writeUserFile(t, s, filepath.Join(proj, ".gitconfig"), "[diff]\n\trenames = true\n", 0o644)
			hostGit(t, s, proj, "config", "include.path", "../.gitconfig")
		}, "step include cp evil.cfg .gitconfig\n",
			[]string{"== include", "cp: cannot create regular file '.gitconfig': " + erofs, "rc=1"},
			[][]string{{"status"}}},
		{"hooks symlink", func(t *testing.T, s *testutil.Sandbox, proj string) {
			mkUserDir(t, s, filepath.Join(proj, "githooks"))
			hooks := filepath.Join(proj, ".git", "hooks")
			if err := os.RemoveAll(hooks); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("../githooks", hooks); err != nil {
				t.Fatal(err)
			}
			s.User.Chown(t, hooks)
		}, "step hook cp evil-hook githooks/post-checkout\n",
			[]string{"== hook", "cp: cannot create regular file 'githooks/post-checkout': " + erofs, "rc=1"},
			[][]string{{"checkout", "-q", "other"}, {"checkout", "-q", "-"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := testutil.NewSandbox(t)
			markers := filepath.Join(s.Home, "markers")
			mkUserDir(t, s, markers)
			proj := gitProject(t, s)
			tt.setup(t, s, proj)
			script := `set -u
step() { echo "== $1"; shift; "$@" 2>&1; echo "rc=$?"; }
printf '#!/bin/sh\ntouch ` + markers + `/hook\n' > evil-hook; chmod +x evil-hook
printf '[core]\n\tfsmonitor = touch ` + markers + `/fsmonitor\n' > evil.cfg
echo two > file
` + tt.plant
			cmd := s.Command("--shell", "-c", script)
			cmd.Dir = proj
			r := testutil.RunCommand(t, cmd)
			mustOK(t, r)
			if want := strings.Join(tt.want, "\n") + "\n"; r.Stdout != want {
				t.Errorf("planting from inside:\n%s\nwant:\n%s\n(%v)", r.Stdout, want, r)
			}
			for _, args := range tt.hostGit {
				tryHostGit(t, s, proj, args...)
			}
			ents, err := os.ReadDir(markers)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				t.Errorf("host git ran what the sandbox planted: marker %s", e.Name())
			}
		})
	}
}

// TestAgentCommitsInItsOwnRepository: with `git commit` in the config the
// agent commits, in a repository of its own bound over the project's .git;
// everything it plants there stays there: the user's git on the host runs
// none of it, in the project or when fetching the agent's work.
func TestAgentCommitsInItsOwnRepository(t *testing.T) {
	testutil.RequireCommand(t, "git")
	s := testutil.NewSandbox(t)
	markers := filepath.Join(s.Home, "markers")
	mkUserDir(t, s, markers)
	proj := gitProject(t, s)
	branch := strings.TrimSpace(hostGit(t, s, proj, "rev-parse", "--abbrev-ref", "HEAD"))
	s.WriteConfig(t, "git commit\n")
	m := func(name string) string { return filepath.Join(markers, name) }
	script := `set -u
step() { echo "== $1"; shift; "$@" 2>&1; echo "rc=$?"; }
step commit sh -c 'echo two > file && git -c user.name=a -c user.email=a@example.com commit -qam agent-two && git log --format=%s'
step host-git-config git -C /run/claude-sandbox/git config core.fsmonitor 'touch ` + m("host-fsmonitor") + `'
step host-git-rename mv -T .git .git-old
for h in pre-commit post-commit post-checkout post-merge reference-transaction pre-push fsmonitor-watchman post-index-change; do
	printf '#!/bin/sh\ntouch ` + markers + `/hook-%s; true\n' $h > .git/hooks/$h; chmod +x .git/hooks/$h
done
printf '[core]\n\tfsmonitor = touch ` + m("include") + `\n' > evil.cfg
step plant sh -c 'git config core.fsmonitor "touch ` + m("fsmonitor") + `" &&
	git config core.hooksPath "$PWD/.git/hooks" &&
	git config include.path "$PWD/evil.cfg" &&
	git config uploadpack.packObjectsHook "touch ` + m("packObjectsHook") + `" &&
	git config core.sshCommand "touch ` + m("sshCommand") + `" &&
	git config core.pager "touch ` + m("pager") + `" &&
	git config core.alternateRefsCommand "touch ` + m("alternateRefsCommand") + `" &&
	git config uploadpack.allowFilter true &&
	echo planted'
`
	cmd := s.Command("--shell", "-c", script)
	cmd.Dir = proj
	r := testutil.RunCommand(t, cmd)
	mustOK(t, r)
	want := strings.Join([]string{
		"== commit", "agent-two", "one", "rc=0",
		"== host-git-config", "error: could not lock config file config: Read-only file system", "rc=255",
		"== host-git-rename", "mv: cannot move '.git' to '.git-old': Device or resource busy", "rc=1",
		"== plant", "planted", "rc=0",
	}, "\n") + "\n"
	if r.Stdout != want {
		t.Errorf("inside:\n%s\nwant:\n%s\n(%v)", r.Stdout, want, r)
	}

	// The user's git on the host: the project's own repository does not
	// have the agent's commit, and runs nothing of it.
	tryHostGit(t, s, proj, "status")
	tryHostGit(t, s, proj, "commit", "-qam", "two")
	tryHostGit(t, s, proj, "checkout", "-q", "other")
	tryHostGit(t, s, proj, "checkout", "-q", "-")
	if got, _ := tryHostGit(t, s, proj, "log", "--format=%s"); got != "two\none\n" {
		t.Errorf("host git log = %q, want the host's commits only", got)
	}
	// Fetching the agent's work runs nothing of its repository either.
	agentGit := filepath.Join(s.Home, ".claude-sandbox-git")
	ents, err := os.ReadDir(agentGit)
	if err != nil || len(ents) != 1 {
		t.Fatalf("~/.claude-sandbox-git: %v, %v; want one repository", ents, err)
	}
	repo := filepath.Join(agentGit, ents[0].Name())
	tryHostGit(t, s, proj, "fetch", "-q", repo, "refs/heads/*:refs/remotes/agent/*")
	if got, _ := tryHostGit(t, s, proj, "log", "--format=%s", "agent/"+branch); got != "agent-two\none\n" {
		t.Errorf("the agent's branch fetched on the host: %q, want its commit", got)
	}
	// The next start fetches the host's branches for the agent.
	cmd = s.Command("--shell", "-c", `git log --format=%s host/`+branch)
	cmd.Dir = proj
	r = testutil.RunCommand(t, cmd)
	if r.Stdout != "two\none\n" {
		t.Errorf("second start: the host's branch inside: %v", r)
	}
	fetchFails := func(step, script string) {
		t.Helper()
		cmd = s.Command("--shell", "-c", script)
		cmd.Dir = proj
		mustOK(t, testutil.RunCommand(t, cmd))
		fetch := s.User.Command(s.Home, "git", "fetch", "-q", repo, "refs/heads/*:refs/remotes/"+step+"/*")
		fetch.Dir = proj
		fetch.Env = append(fetch.Env, "GIT_CONFIG_NOSYSTEM=1")
		testutil.RunCommand(t, fetch) // may fail: nothing must run
		tryHostGit(t, s, proj, "status")
	}
	// A commit whose blob is missing, in a partial clone whose promisor
	// remote is a command: upload-pack must not fetch it lazily.
	fetchFails("lazy", `set -e
git config core.repositoryformatversion 1
git config extensions.partialClone origin
git config remote.origin.promisor true
git config remote.origin.url 'ext::sh -c touch% `+m("lazy-ext")+`'
git config protocol.ext.allow always
echo lazy > lazy && git add lazy && git -c user.name=a -c user.email=a@example.com commit -qm lazy
blob=$(git rev-parse HEAD:lazy) && rm -f .git/objects/$(echo $blob | cut -c1-2)/$(echo $blob | cut -c3-)
true`)
	// Control: with lazy fetches allowed the promisor command runs.
	lazy := s.User.Command(s.Home, "git", "fetch", "-q", repo, "refs/heads/*:refs/remotes/lazy-control/*")
	lazy.Dir = proj
	lazy.Env = append(lazy.Env, "GIT_CONFIG_NOSYSTEM=1", "GIT_NO_LAZY_FETCH=0")
	lr := testutil.RunCommand(t, lazy)
	if _, err := os.Stat(m("lazy-ext")); err != nil {
		t.Errorf("control: a lazy fetch in the agent's repository did not run its promisor command: %v", lr)
	}
	os.Remove(m("lazy-ext"))
	// A commondir pointing the agent's repository elsewhere.
	evil := filepath.Join(proj, "evil-git")
	fetchFails("commondir", `cp -r .git `+evil+` && git config --file `+evil+`/config core.fsmonitor 'touch `+m("commondir")+`' && echo `+evil+` > .git/commondir`)

	if ents, err := os.ReadDir(markers); err != nil || len(ents) != 0 {
		for _, e := range ents {
			t.Errorf("host git ran what the sandbox planted: marker %s", e.Name())
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// Control: the plants are live for git run in the agent's repository
	// as a repository, which is what the user must not do: the exit made
	// it inert (its HEAD renamed), and taking that back makes it live.
	heads, _ := filepath.Glob(filepath.Join(evil, "HEAD.inert-*"))
	if len(heads) != 1 {
		t.Fatalf("want the exit to have renamed %s/HEAD, got %q", evil, heads)
	}
	if err := os.Rename(heads[0], filepath.Join(evil, "HEAD")); err != nil {
		t.Fatal(err)
	}
	ctl := s.User.Command(s.Home, "git", "--git-dir="+evil, "--work-tree="+proj, "status")
	ctl.Env = append(ctl.Env, "GIT_CONFIG_NOSYSTEM=1")
	cr := testutil.RunCommand(t, ctl)
	if ents, _ := os.ReadDir(markers); len(ents) == 0 {
		t.Errorf("control: git run in the agent's repository ran nothing of it: %v", cr)
	}
}

// git commit in a linked worktree: the agent commits on the worktree's
// branch in a repository of its own, bound where the worktree's .git file
// points; the user's repository (its common directory and the worktree's
// git directory) stays read-only and unchanged, and the agent's work is
// fetched from its repository.
func TestAgentCommitsInALinkedWorktree(t *testing.T) {
	testutil.RequireCommand(t, "git")
	s := testutil.NewSandbox(t)
	proj := gitProject(t, s)
	wt := filepath.Join(proj, "wt", "feature")
	before := hostGit(t, s, proj, "for-each-ref", "--format=%(refname) %(objectname)")
	s.WriteConfig(t, "git commit\n")
	script := `set -u
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@example.com GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@example.com
step() { echo "== $1"; shift; "$@" 2>&1; echo "rc=$?"; }
step branch git rev-parse --abbrev-ref HEAD
step status git status --porcelain
step commit sh -c 'echo wt > file && git commit -qam agent-wt && git log --format=%s'
step host-common sh -c 'touch ` + proj + `/.git/refs/heads/x'
step host-gitfile sh -c 'echo "gitdir: /tmp" > .git'
`
	cmd := s.Command("--shell", "-c", script)
	cmd.Dir = wt
	r := testutil.RunCommand(t, cmd)
	mustOK(t, r)
	erofs := "Read-only file system"
	want := strings.Join([]string{
		"== branch", "feature", "rc=0",
		"== status", "rc=0",
		"== commit", "agent-wt", "one", "rc=0",
		"== host-common", "touch: cannot touch '" + proj + "/.git/refs/heads/x': " + erofs, "rc=1",
		"== host-gitfile", "sh: 1: cannot create .git: " + erofs, "rc=2",
	}, "\n") + "\n"
	if r.Stdout != want {
		t.Errorf("inside:\n%s\nwant:\n%s\n(%v)", r.Stdout, want, r)
	}
	if after := hostGit(t, s, proj, "for-each-ref", "--format=%(refname) %(objectname)"); after != before {
		t.Errorf("the user's refs changed:\n%s\nwere:\n%s", after, before)
	}
	if got := hostGit(t, s, wt, "status", "--porcelain"); got != " M file\n" {
		t.Errorf("host git status in the worktree = %q, want the agent's edit and nothing else", got)
	}
	agent := filepath.Join(s.Home, ".claude-sandbox-git")
	ents, _ := os.ReadDir(agent)
	if len(ents) != 1 {
		t.Fatalf("~/.claude-sandbox-git: %v, want one repository", ents)
	}
	hostGit(t, s, proj, "fetch", "-q", filepath.Join(agent, ents[0].Name()), "refs/heads/feature:refs/remotes/agent/feature")
	if got := hostGit(t, s, proj, "log", "--format=%s", "agent/feature"); got != "agent-wt\none\n" {
		t.Errorf("the agent's branch fetched on the host: %q", got)
	}
}
