package claude

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/pushlog"
	"github.com/claude-sandbox/claude-sandbox/internal/quote"
)

// A session of `claude -w NAME` runs in the worktree
// PROJECT/.claude/worktrees/NAME on the branch worktree-NAME, where the
// agent puts its own: the launcher makes it with the user's git on the
// host, in the user's repository, before the sandbox starts, and then
// starts the sandbox in it as in any linked worktree (its own directory
// read-write, the repository's read-only).

// worktreeDirs are the directories below the project that hold the
// worktrees.
var worktreeDirs = []string{".claude", "worktrees"}

// sessionWorktree is the worktree a -w session runs in.
type sessionWorktree struct {
	dir, branch, repo string
	made              bool // made for this session, not resumed
}

// findCheckout returns the root of the git checkout pwd is in, below home:
// the nearest directory with a .git, which must be a repository's main
// work tree.
func findCheckout(pwd, home string) (string, error) {
	for d := pwd; strings.HasPrefix(d, home+"/"); d = filepath.Dir(d) {
		fi, err := os.Lstat(filepath.Join(d, ".git"))
		if err != nil {
			continue
		}
		if !fi.IsDir() {
			return "", fmt.Errorf("-w: %s is a linked worktree or a submodule (its .git is not a directory): run claude -w in the repository's main work tree", quote.String(d))
		}
		return d, nil
	}
	return "", fmt.Errorf("-w: the working directory %s is in no git checkout below your home: run claude -w in a repository", quote.String(pwd))
}

// openNoLinks opens name below dirfd (or the absolute name) with no
// symlink on the way, as an O_PATH directory fd.
func openNoLinks(dirfd int, name string) (int, error) {
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	if dirfd != unix.AT_FDCWD {
		how.Resolve |= unix.RESOLVE_BENEATH
	}
	for {
		fd, err := unix.Openat2(dirfd, name, &how)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// gitEnv is the launcher's environment for the user's git on the host:
// without what steers the loader or names another repository.
func gitEnv() []string {
	env := hostEnv(os.Environ())
	out := env[:0]
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
			"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// worktreeGit runs the user's git on the host in repo with what would run
// a program of the repository's work tree switched off (hooks,
// fsmonitor), in the launcher's environment without what steers the
// loader or names another repository.
func worktreeGit(repo string, args ...string) (string, error) {
	path, err := exec.LookPath("git")
	if err != nil {
		return "", errors.New("-w: git is not installed here: install git to make worktrees")
	}
	cmd := exec.Command(path, append([]string{"-C", repo, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"}, args...)...)
	cmd.Dir, cmd.Env = "/", gitEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := pushlog.LastLine(errb.String(), err)
		return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), msg)
	}
	return strings.TrimSpace(out.String()), nil
}

// registered reports whether dir is a worktree the repository at repo
// lists (its worktrees/*/gitdir names dir/.git).
func registered(repo, dir string) bool {
	files, _ := filepath.Glob(filepath.Join(repo, ".git", "worktrees", "*", "gitdir"))
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(io.LimitReader(fh, 1<<16))
		fh.Close()
		if strings.TrimSpace(string(b)) == filepath.Join(dir, ".git") {
			return true
		}
	}
	return false
}

// prepareWorktree makes (or, when the name is given and it exists, takes
// again) the session's worktree of the checkout pwd is in. Every directory
// on the way is opened with no symlink, those missing are made, and after
// git has made the worktree its directory must still be the one made
// here: a link the agent planted in the project is never followed.
func prepareWorktree(wf *worktreeFlag, pwd, home string, dryRun bool) (*sessionWorktree, error) {
	repo, err := findCheckout(pwd, home)
	if err != nil {
		return nil, err
	}
	wt := &sessionWorktree{repo: repo, branch: worktreeBranch(wf.name),
		dir: filepath.Join(append(append([]string{repo}, worktreeDirs...), wf.name)...)}
	fd, err := openNoLinks(unix.AT_FDCWD, repo)
	if err != nil {
		return nil, fmt.Errorf("-w: %s: %w", quote.String(repo), err)
	}
	// fd walks down: the directory reached so far, closed once when the
	// walk moves on and the last one here. (A defer of unix.Close(fd)
	// would close the first number a second time, by then another
	// goroutine's fd: a bind source opened early.)
	defer func() { unix.Close(fd) }()
	rel := ""
	for _, d := range append(worktreeDirs, wf.name) {
		rel = filepath.Join(rel, d)
		last := d == wf.name
		nfd, err := openNoLinks(fd, d)
		switch {
		case err == nil && last:
			unix.Close(nfd)
			if !wf.given || !registered(repo, wt.dir) {
				return nil, fmt.Errorf("-w %s: %s exists and is not a worktree of %s: remove it or choose another name", wf.name, quote.String(wt.dir), quote.String(repo))
			}
			return wt, nil
		case err == nil:
			unix.Close(fd)
			fd = nfd
			continue
		case err == unix.ELOOP || err == unix.EXDEV || err == unix.ENOTDIR:
			return nil, fmt.Errorf("-w: %s is a symlink or not a directory (the agent may have made it): remove it", quote.String(filepath.Join(repo, rel)))
		case err != unix.ENOENT:
			return nil, fmt.Errorf("-w: %s: %w", quote.String(filepath.Join(repo, rel)), err)
		}
		if dryRun {
			return wt, nil
		}
		if err := unix.Mkdirat(fd, d, 0o755); err != nil && err != unix.EEXIST {
			return nil, fmt.Errorf("-w: mkdir %s: %w", quote.String(filepath.Join(repo, rel)), err)
		}
		if nfd, err = openNoLinks(fd, d); err != nil {
			return nil, fmt.Errorf("-w: %s: %w", quote.String(filepath.Join(repo, rel)), err)
		}
		unix.Close(fd)
		fd = nfd
	}
	if dryRun {
		return wt, nil
	}
	// fd is the worktree's directory, empty and made here: git adds a
	// worktree into an empty directory.
	var made unix.Stat_t
	if err := unix.Fstat(fd, &made); err != nil {
		return nil, fmt.Errorf("-w: %s: %w", quote.String(wt.dir), err)
	}
	base := "HEAD"
	if _, err := worktreeGit(repo, "rev-parse", "-q", "--verify", "refs/remotes/origin/HEAD"); err == nil {
		base = "origin/HEAD"
	}
	args := []string{"worktree", "add", "-q", "-b", wt.branch, wt.dir, base}
	if _, err := worktreeGit(repo, "rev-parse", "-q", "--verify", "refs/heads/"+wt.branch); err == nil {
		args = []string{"worktree", "add", "-q", wt.dir, wt.branch}
	}
	if _, err := worktreeGit(repo, args...); err != nil {
		os.Remove(wt.dir) // only if git left it empty
		return nil, fmt.Errorf("-w %s: %w", wf.name, err)
	}
	// The directory git wrote is still the one made here, with no link on
	// the way to it.
	again, err := openNoLinks(unix.AT_FDCWD, wt.dir)
	if err != nil {
		return nil, fmt.Errorf("-w: %s changed while git made the worktree (%v): look at it before you use it", quote.String(wt.dir), err)
	}
	var st unix.Stat_t
	err = unix.Fstat(again, &st)
	unix.Close(again)
	if err != nil || st.Dev != made.Dev || st.Ino != made.Ino {
		return nil, fmt.Errorf("-w: %s was replaced while git made the worktree: look at it before you use it", quote.String(wt.dir))
	}
	wt.made = true
	return wt, nil
}

// enter makes the worktree the working directory of the launch.
func (wt *sessionWorktree) enter() error {
	if err := os.Chdir(wt.dir); err != nil {
		return fmt.Errorf("-w: %w", err)
	}
	return os.Setenv("PWD", wt.dir)
}

// notice says where the session runs, before it starts.
func (wt *sessionWorktree) notice(dryRun bool) string {
	switch {
	case dryRun && !wt.made:
		if _, err := os.Lstat(wt.dir); errors.Is(err, fs.ErrNotExist) {
			return fmt.Sprintf("-w: would make the worktree %s on the branch %s with your git (the dry run shows the working directory's sandbox)", quote.String(wt.dir), wt.branch)
		}
		return fmt.Sprintf("-w: the session would run in the worktree %s", quote.String(wt.dir))
	case wt.made:
		return fmt.Sprintf("-w: made the worktree %s on the new branch %s", quote.String(wt.dir), wt.branch)
	}
	return fmt.Sprintf("-w: the session runs in the worktree %s again", quote.String(wt.dir))
}

// farewell says, after the session, what stays and how to remove it.
func (wt *sessionWorktree) farewell() string {
	return fmt.Sprintf("-w: the worktree %s (branch %s) stays; when you are done with it: git -C %s worktree remove %s",
		quote.String(wt.dir), wt.branch, quote.String(wt.repo), quote.String(wt.dir))
}

// worktreeBranch is the branch a new worktree gets, as the agent names it.
func worktreeBranch(name string) string { return "worktree-" + name }
