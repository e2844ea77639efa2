package claude

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/linkwalk"
	"github.com/claude-sandbox/claude-sandbox/internal/pushlog"
	"github.com/claude-sandbox/claude-sandbox/internal/quote"
	"github.com/claude-sandbox/claude-sandbox/internal/sandbox"
)

// The push broker (git push lines, internal/sandbox/agentpush.go): the
// agent's git push reaches this process over the socket in PUSHDIR/sock.d,
// bound read-only inside. Per connection the launcher fetches the remote's
// branches with the user's git into PUSHDIR/staging.git, a bare repository
// of its own with a config of its own (no system or global config, no
// hooks but its pre-receive, fsckObjects, a size bound), and runs git
// receive-pack there on the connection: the agent's git sends its ref
// updates and a pack, never a command line. The pre-receive hook
// (claude-sandbox git pre-receive, applets/git) checks every ref and
// pushes them with the user's git, config and credentials, which the
// sandbox never sees. Nothing of the agent's repository runs on the host:
// the launcher's git never opens it.

// maxPushInput bounds the pack of one push (receive.maxInputSize).
const maxPushInput = 100 << 20

// stagingConfig is the staging repository's whole config.
const stagingConfig = `[core]
	repositoryformatversion = 0
	bare = true
	hooksPath = %s
	fsmonitor = false
	logAllRefUpdates = false
[receive]
	fsckObjects = true
	denyDeletes = true
	denyNonFastForwards = true
	denyCurrentBranch = refuse
	maxInputSize = %d
	advertisePushOptions = false
	shallowUpdate = false
	autogc = false
[gc]
	auto = 0
`

// preparePush makes PUSHDIR (0700, the user's, as the agent's repository
// is), its sock.d, and the staging repository with its config and hook:
// the binds need sock.d before the start.
func preparePush(l *sandbox.Launch, uid int) error {
	if len(l.Pushes) == 0 {
		return nil
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("git push: the launcher's own executable: %w", err)
	}
	staging, hooks := filepath.Join(l.PushDir, "staging.git"), filepath.Join(l.PushDir, "hooks")
	for _, d := range []string{l.PushDir, filepath.Join(l.PushDir, "sock.d"), hooks} {
		if err := ownDir(d, uid); err != nil {
			return fmt.Errorf("git push: %w", err)
		}
	}
	if _, err := os.Lstat(filepath.Join(staging, "HEAD")); errors.Is(err, fs.ErrNotExist) {
		if _, err := userGit("", nil, "init", "-q", "--bare", "--template=", staging); err != nil {
			return fmt.Errorf("git push: the staging repository: %w", err)
		}
	}
	if err := ownDir(staging, uid); err != nil {
		return fmt.Errorf("git push: %w", err)
	}
	conf := fmt.Sprintf(stagingConfig, gitConfigQuote(hooks), maxPushInput)
	if err := replaceFile(filepath.Join(staging, "config"), []byte(conf), 0o600); err != nil {
		return fmt.Errorf("git push: the staging repository's config: %w", err)
	}
	hook := "#!/bin/sh\nexec " + shellQuote(self) + " git pre-receive\n"
	if err := replaceFile(filepath.Join(hooks, "pre-receive"), []byte(hook), 0o700); err != nil {
		return fmt.Errorf("git push: the staging repository's hook: %w", err)
	}
	return nil
}

// ownDir makes d 0700 if missing and checks that it is a directory of uid
// (not a symlink).
func ownDir(d string, uid int) error {
	if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	fi, err := os.Lstat(d)
	switch {
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory: remove it", quote.String(d))
	case fileOwner(fi) != uid:
		return fmt.Errorf("%s is owned by uid %d, not by you (uid %d): remove it", quote.String(d), fileOwner(fi), uid)
	}
	return nil
}

// replaceFile writes data to a new file beside path and renames it there.
func replaceFile(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".new"
	os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func gitConfigQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// userGit runs the user's git on the host, in / (the launcher's
// directory is the project, which the sandbox writes), with the
// launcher's environment without what steers the loader or names a
// repository, plus env, and returns its output.
func userGit(gitDir string, env []string, args ...string) (string, error) {
	path, err := exec.LookPath("git")
	if err != nil {
		return "", errors.New("git is not installed here: install git")
	}
	cmd := exec.Command(path, args...)
	cmd.Dir, cmd.Env = "/", append(gitEnv(), env...)
	if gitDir != "" {
		cmd.Env = append(cmd.Env, "GIT_DIR="+gitDir)
	}
	// No terminal: a prompt for a password or a passphrase fails
	// instead of taking the agent's terminal.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %s", args[0], pushlog.LastLine(errb.String(), err))
	}
	return strings.TrimSpace(out.String()), nil
}

// pushBroker serves the sandbox's pushes for one session.
type pushBroker struct {
	l       *sandbox.Launch
	ln      *net.UnixListener
	session string
	log     string
	home    string
	mu      sync.Mutex // one push at a time: they share the staging repository
	wg      sync.WaitGroup
	conns   sync.Map // *net.UnixConn: closed at the end
}

// openPushBroker listens on the socket, if the launch has git push lines;
// nil otherwise.
func openPushBroker(l *sandbox.Launch, home string) (*pushBroker, error) {
	if len(l.Pushes) == 0 {
		return nil, nil
	}
	sock := filepath.Join(l.PushDir, "sock.d", sandbox.PushSocket)
	if fi, err := os.Lstat(sock); err == nil && fi.Mode().Type() == fs.ModeSocket {
		os.Remove(sock) // an earlier session's
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("git push: the launcher's socket: %w", err)
	}
	b := &pushBroker{l: l, ln: ln, session: newID(), log: pushlog.Path(home), home: home}
	b.wg.Add(1)
	go b.serve()
	return b, nil
}

func (b *pushBroker) serve() {
	defer b.wg.Done()
	for {
		c, err := b.ln.AcceptUnix()
		if err != nil {
			return
		}
		b.conns.Store(c, true)
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			defer b.conns.Delete(c)
			defer c.Close()
			b.handle(c)
		}()
	}
}

// close stops listening, ends the pushes still running (the sandbox has
// ended: nobody reads their answer) and waits for them.
func (b *pushBroker) close() {
	if b == nil {
		return
	}
	b.ln.Close()
	b.conns.Range(func(k, _ any) bool {
		k.(*net.UnixConn).Close()
		return true
	})
	b.wg.Wait()
}

// summary prints this session's pushes.
func (b *pushBroker) summary(w io.Writer) {
	if b == nil {
		return
	}
	es, err := pushlog.Read(b.log, b.session)
	if err != nil {
		fmt.Fprintf(w, "claude: git push: %v\n", err)
		return
	}
	var sb strings.Builder
	for _, e := range es {
		fmt.Fprintf(&sb, "claude: git push: %s\n", e.Line())
	}
	if len(es) > 0 {
		sb.WriteString("claude: git push: every push is in claude-sandbox git log\n")
	}
	io.WriteString(w, sb.String())
}

// maxHeader bounds the line the remote helper sends first.
const maxHeader = 128

// handle serves one push.
func (b *pushBroker) handle(c *net.UnixConn) {
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	remote, err := readHeader(c)
	c.SetReadDeadline(time.Time{})
	if err != nil {
		b.refuse(c, "", err.Error())
		return
	}
	var rule *sandbox.PushRule
	for i := range b.l.Pushes {
		if b.l.Pushes[i].Remote == remote {
			rule = &b.l.Pushes[i]
		}
	}
	if rule == nil {
		b.refuse(c, remote, fmt.Sprintf("no git push line in %s names the remote %q", configName, remote))
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	id := newID()
	url, err := b.remoteURL(remote)
	if err != nil {
		b.refuse(c, remote, err.Error())
		return
	}
	staging := filepath.Join(b.l.PushDir, "staging.git")
	// The remote's branches as they are now: what the checks compare
	// against, and what receive-pack offers the agent's git.
	if _, err := userGit(staging, nil, "fetch", "-q", "--prune", "--no-tags", "--no-write-fetch-head", url, "+refs/heads/*:refs/heads/*"); err != nil {
		b.refuse(c, remote, pushlog.Redact(err.Error(), url))
		return
	}
	gitPath, err := exec.LookPath("git")
	if err != nil {
		b.refuse(c, remote, "git is not installed here")
		return
	}
	env := gitEnv()
	for _, kv := range pushlog.Isolated {
		k, _, _ := strings.Cut(kv, "=")
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, pushlog.EnvSaved+k+"="+v)
		}
	}
	ci := "0"
	if rule.CI {
		ci = "1"
	}
	env = append(env, pushlog.Isolated...)
	env = append(env,
		pushlog.EnvURL+"="+url, pushlog.EnvRemote+"="+remote,
		pushlog.EnvPatterns+"="+strings.Join(rule.Patterns, "\n"), pushlog.EnvCI+"="+ci,
		pushlog.EnvCIPaths+"="+strings.Join(rule.CIPaths, "\n"),
		pushlog.EnvProject+"="+b.l.PushProject, pushlog.EnvSession+"="+b.session,
		pushlog.EnvLog+"="+b.log, pushlog.EnvGit+"="+gitPath, pushlog.EnvPush+"="+id)
	in := &firstBytes{r: c}
	cmd := exec.Command(gitPath, "receive-pack", staging)
	cmd.Dir, cmd.Env = "/", env
	cmd.Stdin, cmd.Stdout = in, c
	var errb bytes.Buffer
	cmd.Stderr = &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// Once receive-pack has ended, a client that keeps the connection
	// open holds only the copy of its input.
	cmd.WaitDelay = 10 * time.Second
	err = cmd.Run()
	// The hook logs every ref it sees; a push with refs (not a lone
	// flush packet) that it never saw was refused by receive-pack itself:
	// objects that fail fsck, a pack over the bound.
	if !b.logged(id) && in.n == len(in.head) && string(in.head[:]) != "0000" {
		why := "git receive-pack did not take the agent's objects (they fail git fsck, or pass the size bound of 100 MiB)"
		if errb.Len() > 0 {
			why += ": " + pushlog.Redact(pushlog.LastLine(errb.String(), err), url)
		}
		pushlog.Append(b.log, b.entry(remote, pushlog.Refused, why))
	}
}

// logged reports whether the log has an entry of the connection id (the
// hook's), not by counting entries: other sessions append too.
func (b *pushBroker) logged(id string) bool {
	es, _ := pushlog.Read(b.log, b.session)
	for _, e := range es {
		if e.Push == id {
			return true
		}
	}
	return false
}

func newID() string {
	var id [8]byte
	rand.Read(id[:])
	return hex.EncodeToString(id[:])
}

// firstBytes reads r and keeps its first four bytes: receive-pack's first
// packet's length, "0000" for a push of no refs.
type firstBytes struct {
	r    io.Reader
	head [4]byte
	n    int
}

func (f *firstBytes) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if f.n < len(f.head) {
		f.n += copy(f.head[f.n:], p[:n])
	}
	return n, err
}

// readHeader reads "push REMOTE\n", a byte at a time: what follows is
// receive-pack's.
func readHeader(r io.Reader) (string, error) {
	var line []byte
	var c [1]byte
	for len(line) < maxHeader {
		if _, err := io.ReadFull(r, c[:]); err != nil {
			return "", errors.New("the push did not name its remote")
		}
		if c[0] == '\n' {
			remote, ok := strings.CutPrefix(string(line), "push ")
			if !ok || remote == "" {
				return "", errors.New("the push did not name its remote")
			}
			return remote, nil
		}
		line = append(line, c[0])
	}
	return "", errors.New("the push's first line is too long")
}

func (b *pushBroker) entry(remote, result, why string) pushlog.Entry {
	return pushlog.Entry{Time: time.Now().UTC(), Session: b.session, Project: b.l.PushProject, Remote: remote, Result: result, Why: why}
}

// refuse answers the agent's git with an error packet (git prints
// "remote error: ...") and logs it.
func (b *pushBroker) refuse(c io.Writer, remote, why string) {
	pushlog.Append(b.log, b.entry(remote, pushlog.Refused, why))
	msg := "ERR claude-sandbox: push refused: " + why + "\n"
	if len(msg) > 65000 {
		msg = msg[:65000] + "\n"
	}
	fmt.Fprintf(c, "%04x%s", len(msg)+4, msg)
}

// remoteURL returns where remote pushes to, from the project's git
// config (pushurl, else url), refusing a URL that makes the user's git run
// or read what the sandbox writes: a local repository there (its hooks
// would run on the host), a transport that runs a command.
func (b *pushBroker) remoteURL(remote string) (string, error) {
	repo := b.l.PushProject
	url, err := userGit("", nil, "-C", repo, "config", "--get", "remote."+remote+".pushurl")
	if err != nil || url == "" {
		url, err = userGit("", nil, "-C", repo, "config", "--get", "remote."+remote+".url")
	}
	if err != nil || url == "" {
		return "", fmt.Errorf("the project has no remote %q: add it on the host (git remote add %s URL)", remote, remote)
	}
	if strings.ContainsAny(url, "\n\x00") {
		return "", fmt.Errorf("the URL of the remote %q is not one line", remote)
	}
	if p, ok := localRepo(url); ok {
		if err := b.checkLocal(p); err != nil {
			return "", fmt.Errorf("the remote %q is %w", remote, err)
		}
		return url, nil
	}
	if t, _, ok := strings.Cut(url, "::"); ok && !strings.Contains(t, "/") {
		switch t {
		case "ext", "fd", "sbx":
			return "", fmt.Errorf("the remote %q is reached through git-remote-%s, which the launcher does not push with: give it an ssh or https URL", remote, t)
		}
	}
	return url, nil
}

// localRepo returns the path of a URL that git reaches on this machine:
// a path, or file://.
func localRepo(url string) (string, bool) {
	if p, ok := strings.CutPrefix(url, "file://"); ok {
		return p, true
	}
	if strings.Contains(url, "://") || strings.Contains(url, "::") {
		return "", false
	}
	// scp-like host:path has a colon before any slash.
	if i := strings.IndexByte(url, ':'); i >= 0 && (strings.IndexByte(url, '/') < 0 || i < strings.IndexByte(url, '/')) {
		return "", false
	}
	return url, true
}

// checkLocal refuses a local repository that lies, or may lie, where the
// sandbox writes: resolved as the kernel will, every hop.
func (b *pushBroker) checkLocal(p string) error {
	if !filepath.IsAbs(p) {
		return fmt.Errorf("a relative path (%s): give it an absolute one", quote.String(p))
	}
	real, hops, err := linkwalk.Resolve(osHost{}, p)
	if err != nil && !errors.As(err, new(*linkwalk.MissingError)) {
		return fmt.Errorf("%s, which cannot be resolved (%v): counted as where the sandbox writes", quote.String(p), err)
	}
	for _, w := range b.l.WritableSources() {
		wr := w
		if r, _, err := linkwalk.Resolve(osHost{}, w); err == nil {
			wr = r
		}
		for _, q := range append([]string{p, real}, hops...) {
			if q == w || q == wr || strings.HasPrefix(q, w+"/") || strings.HasPrefix(q, wr+"/") {
				return fmt.Errorf("a repository where the sandbox writes (%s, in %s): the host's git would run its hooks", quote.String(p), quote.String(w))
			}
		}
	}
	return nil
}
