//go:build linux

package claude_test

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// pushProject makes ~/src/p, a repository on branch main with one commit,
// whose remote origin is url, and ~/forge.git, a bare repository with
// main pushed to it; it returns both.
func pushProject(t *testing.T, s *testutil.Sandbox) (proj, forge string) {
	t.Helper()
	forge = filepath.Join(s.Home, "forge.git")
	proj = filepath.Join(s.Home, "src", "p")
	mkUserDir(t, s, forge)
	mkUserDir(t, s, proj)
	hostGit(t, s, forge, "init", "-q", "--bare", "-b", "main")
	writeUserFile(t, s, filepath.Join(proj, "file"), "one\n", 0o644)
	hostGit(t, s, proj, "init", "-q", "-b", "main")
	hostGit(t, s, proj, "add", "file")
	hostGit(t, s, proj, "commit", "-qm", "one")
	hostGit(t, s, proj, "remote", "add", "origin", "file://"+forge)
	hostGit(t, s, proj, "push", "-q", "origin", "main")
	return proj, forge
}

// pushScript is what the agent runs: each step's output and status.
const pushSteps = `set -u
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@example.com GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@example.com
step() { echo "== $1"; shift; "$@" 2>&1; echo "rc=$?"; }
`

// The agent's git push reaches the forge through the launcher, for the
// branches the line allows and nothing else: no other branch, no force,
// no deletion, no tag, no change of CI definitions, no object that fails
// fsck; and nothing of the agent's repository runs on the host.
func TestAgentPushesThroughTheLauncher(t *testing.T) {
	testutil.RequireCommand(t, "git")
	s := testutil.NewSandbox(t)
	markers := filepath.Join(s.Home, "markers")
	mkUserDir(t, s, markers)
	proj, forge := pushProject(t, s)
	s.WriteConfig(t, "git commit\ngit push origin\n")
	m := func(name string) string { return filepath.Join(markers, name) }
	script := pushSteps + `
for h in pre-push post-update pre-receive update reference-transaction post-receive push-to-checkout; do
	printf '#!/bin/sh\ntouch ` + markers + `/hook-%s; true\n' $h > .git/hooks/$h; chmod +x .git/hooks/$h
done
git config core.fsmonitor "touch ` + m("fsmonitor") + `"
git config uploadpack.packObjectsHook "touch ` + m("packObjectsHook") + `"
git config core.sshCommand "touch ` + m("sshCommand") + `"
git config receive.procReceiveRefs refs
git checkout -q -b work
echo two > file && git commit -qam two
step agent git push origin HEAD:agent/x
step main git push origin HEAD:main
step force git push -f origin HEAD~1:refs/heads/agent/x
step delete git push origin :agent/x
git tag v1
step tag git push origin v1
mkdir -p .github/workflows && echo 'on: push' > .github/workflows/ci.yml && git add .github && git commit -qm ci
step ci git push origin HEAD:agent/ci
bad=$(printf 'tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor nobody\ncommitter nobody\n\nbad\n' | git hash-object -t commit --literally -w --stdin)
step fsck git push origin $bad:refs/heads/agent/bad
step fetch git fetch origin
lt=$(printf '%0200d' 0 | tr 0 '<')
step long git push origin HEAD~1:refs/heads/agent/$lt/$lt/$lt/$lt
cic=$(git rev-parse HEAD)
git checkout -q -b sneak HEAD~1 && git merge -q -s ours -m sneak $cic
step sneak git push origin HEAD:agent/sneak
step ci2 git push origin $cic:refs/heads/agent/ci2
`
	cmd := s.Command("--shell", "-c", script)
	cmd.Dir = proj
	r := testutil.RunCommand(t, cmd)
	mustOK(t, r)
	steps := splitSteps(r.Stdout)
	for _, w := range []struct{ step, want, rc string }{
		{"agent", "remote: claude-sandbox: refs/heads/agent/x: pushed to origin", "rc=0"},
		{"main", "remote: claude-sandbox: refs/heads/main: refused: the branch main matches none of the git push line's patterns (agent/*): push to one that does, as in git push origin HEAD:agent/NAME", "rc=1"},
		{"force", "remote: claude-sandbox: refs/heads/agent/x: refused: not a fast-forward of the remote's agent/x (force pushes stay yours to do)", "rc=1"},
		{"delete", "remote: claude-sandbox: refs/heads/agent/x: refused: a deletion (deleting a branch stays yours to do)", "rc=1"},
		{"tag", "remote: claude-sandbox: refs/tags/v1: refused: only branches are pushed (tags and other refs stay yours to push)", "rc=1"},
		{"ci", "changes .github/workflows/ci.yml, a CI definition the forge runs with the repository's secrets (end the git push line with ci to allow it)", "rc=1"},
		{"fsck", "fsck error in packed object", "rc=1"},
		{"fetch", "the sandbox only pushes to it (through the launcher); fetch on the host", "rc=128"},
		// Its entry's line, escaped, is over 4 KiB: it once went unread,
		// and the launcher logged a refusal of a push that landed.
		{"long", ": pushed to origin", "rc=0"},
		// A merge by -s ours hides the commit that changes a CI
		// definition from git log's history, and, once the remote has
		// it on another branch, it can be pushed as a branch's tip: the
		// tip's CI definitions are what the forge runs.
		{"sneak", "remote: claude-sandbox: refs/heads/agent/sneak: pushed to origin", "rc=0"},
		{"ci2", "remote: claude-sandbox: refs/heads/agent/ci2: refused: the CI definitions of " + ".github/workflows differ from those of every branch of the remote: the forge would run them with the repository's secrets (end the git push line with ci to allow it)", "rc=1"},
	} {
		got := steps[w.step]
		if !strings.Contains(got, w.want) || !strings.HasSuffix(got, w.rc+"\n") {
			t.Errorf("step %s:\n%s\nwant a line with %q and %s", w.step, got, w.want, w.rc)
		}
	}
	// The forge has agent/x at the agent's commit, and nothing else of it.
	lt := strings.Repeat("<", 200)
	if got := hostGit(t, s, forge, "for-each-ref", "--format=%(refname) %(subject)"); got != "refs/heads/agent/"+lt+"/"+lt+"/"+lt+"/"+lt+" two\nrefs/heads/agent/sneak sneak\nrefs/heads/agent/x two\nrefs/heads/main one\n" {
		t.Errorf("the forge's refs:\n%s", got)
	}
	ents, _ := os.ReadDir(markers)
	for _, e := range ents {
		t.Errorf("the host ran the agent's %s", e.Name())
	}
	// The session's summary, and the log.
	for _, want := range []string{
		"claude: git push: origin agent/x -..",
		": pushed\n",
		"claude: git push: origin main ",
		": refused (the branch main matches none",
		"claude: git push: every push is in claude-sandbox git log\n",
		"claude: git push: origin agent/" + lt + "/" + lt,
	} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("the summary lacks %q:\n%s", want, r.Stderr)
		}
	}
	if n := strings.Count(r.Stderr, "did not take the agent's objects"); n != 1 {
		t.Errorf("the summary has %d refusals by receive-pack, want 1 (the fsck step's):\n%s", n, r.Stderr)
	}
	testutil.Link(t, s.LinkDir, "claude-sandbox")
	lg := s.User.Command(s.Home, filepath.Join(s.LinkDir, "claude-sandbox"), "git", "log")
	lr := testutil.RunCommand(t, lg)
	if lr.Code != 0 || !strings.Contains(lr.Stdout, proj+" origin agent/x -..") || strings.Count(lr.Stdout, "\n") < 7 {
		t.Errorf("claude-sandbox git log:\n%v", lr)
	}
}

// splitSteps maps each "== NAME" step of out to the lines after it.
func splitSteps(out string) map[string]string {
	m := map[string]string{}
	name := ""
	for _, l := range strings.SplitAfter(out, "\n") {
		if n, ok := strings.CutPrefix(l, "== "); ok {
			name = strings.TrimSpace(n)
			continue
		}
		m[name] += l
	}
	return m
}

// A forge behind HTTP that demands a password, which a credential helper
// on the host gives: the agent's push lands, and the password is nowhere
// in the sandbox's view, its environment or what its git received.
func TestAgentPushesOverHTTPWithTheUsersCredentials(t *testing.T) {
	testutil.RequireCommand(t, "git")
	backend := "/usr/lib/git-core/git-http-backend"
	if _, err := os.Stat(backend); err != nil {
		testutil.Missing(t, "git-http-backend: %v", err)
	}
	s := testutil.NewSandbox(t)
	var id [12]byte
	rand.Read(id[:])
	secret := "pw-" + hex.EncodeToString(id[:])
	root := t.TempDir()
	forge := filepath.Join(root, "forge.git")
	if out, err := exec.Command("git", "init", "-q", "--bare", "-b", "main", forge).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	if out, err := exec.Command("git", "-C", forge, "config", "http.receivepack", "true").CombinedOutput(); err != nil {
		t.Fatalf("git config: %v: %s", err, out)
	}
	var denied atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "u" || p != secret {
			denied.Add(1)
			w.Header().Set("WWW-Authenticate", `Basic realm="forge"`)
			http.Error(w, "password", http.StatusUnauthorized)
			return
		}
		h := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=u", "GIT_CONFIG_NOSYSTEM=1"}}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	// The credential helper, where the sandbox does not look.
	helper := filepath.Join(s.Home, ".cred", "helper")
	mkUserDir(t, s, filepath.Dir(helper))
	writeUserFile(t, s, helper, "#!/bin/sh\ntest \"$1\" = get || exit 0\necho username=u\necho password="+secret+"\n", 0o700)
	writeUserFile(t, s, filepath.Join(s.Home, ".gitconfig"), "[credential]\n\thelper = "+helper+"\n", 0o600)

	proj := filepath.Join(s.Home, "src", "p")
	mkUserDir(t, s, proj)
	writeUserFile(t, s, filepath.Join(proj, "file"), "one\n", 0o644)
	hostGit(t, s, proj, "init", "-q", "-b", "main")
	hostGit(t, s, proj, "add", "file")
	hostGit(t, s, proj, "commit", "-qm", "one")
	hostGit(t, s, proj, "remote", "add", "origin", srv.URL+"/forge.git")
	hostGit(t, s, proj, "push", "-q", "origin", "main")
	s.WriteConfig(t, "git commit\ngit push origin\n")
	// The secret as a pattern that is not itself the secret: the grep's
	// own command line is in the sandbox's /proc.
	pattern := "[" + secret[:1] + "]" + secret[1:]
	script := pushSteps + `
git checkout -q -b work
echo two > file && git commit -qam two
git push origin HEAD:agent/x > /tmp/push.out 2>&1; echo "push rc=$?"
cat /tmp/push.out
echo "== grep"
grep -r -s -l -I -e '` + pattern + `' / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev
grep -s -l -a -e '` + pattern + `' /proc/[0-9]*/environ /proc/[0-9]*/cmdline
env | grep -e '` + pattern + `'
echo "== end"
`
	cmd := s.Command("--shell", "-c", script)
	cmd.Dir = proj
	r := testutil.RunCommandWithin(t, cmd, 10*time.Minute)
	mustOK(t, r)
	if !strings.Contains(r.Stdout, "push rc=0\n") || !strings.Contains(r.Stdout, "remote: claude-sandbox: refs/heads/agent/x: pushed to origin") {
		t.Errorf("the push over HTTP:\n%v", r)
	}
	if got := splitSteps(r.Stdout)["grep"]; got != "" {
		t.Errorf("the password is in the sandbox's view:\n%s", got)
	}
	if strings.Contains(r.Stdout, secret) || strings.Contains(r.Stderr, secret) {
		t.Errorf("the password is in what the sandbox printed:\n%v", r)
	}
	out, err := exec.Command("git", "-C", forge, "log", "--format=%s", "agent/x").CombinedOutput()
	if err != nil || string(out) != "two\none\n" {
		t.Errorf("the forge's agent/x: %v: %s", err, out)
	}
	if denied.Load() == 0 {
		t.Errorf("the forge never asked for the password: the test shows nothing")
	}
}

// A remote that is a repository where the sandbox writes is refused: its
// hooks, which the agent wrote, would run in the user's git on the host.
// Through a link on the host too, and through a link the agent plants.
func TestAgentPushToARepositoryItWritesIsRefused(t *testing.T) {
	testutil.RequireCommand(t, "git")
	s := testutil.NewSandbox(t)
	markers := filepath.Join(s.Home, "markers")
	mkUserDir(t, s, markers)
	proj, _ := pushProject(t, s)
	evil := filepath.Join(proj, "evil.git")
	mkUserDir(t, s, evil)
	hostGit(t, s, evil, "init", "-q", "--bare")
	link := filepath.Join(s.Home, "evil-link")
	if err := os.Symlink(evil, link); err != nil {
		t.Fatal(err)
	}
	hostGit(t, s, proj, "remote", "add", "evil", evil)
	hostGit(t, s, proj, "remote", "add", "linked", "file://"+link)
	hostGit(t, s, proj, "remote", "add", "later", filepath.Join(proj, "later", "r.git"))
	s.WriteConfig(t, "git commit\ngit push evil\ngit push linked\ngit push later\ngit push origin\n")
	script := pushSteps + `
for r in evil.git later/r.git; do
	mkdir -p $r/hooks
	for h in pre-receive update post-receive post-update reference-transaction; do
		printf '#!/bin/sh\ntouch ` + markers + `/%s\n' $h > $r/hooks/$h; chmod +x $r/hooks/$h
	done
done
git init -q --bare later/r.git
step evil git push evil HEAD:refs/heads/agent/x
step linked git push linked HEAD:refs/heads/agent/x
step later git push later HEAD:refs/heads/agent/x
step other git push nowhere HEAD:refs/heads/agent/x
`
	cmd := s.Command("--shell", "-c", script)
	cmd.Dir = proj
	r := testutil.RunCommand(t, cmd)
	mustOK(t, r)
	steps := splitSteps(r.Stdout)
	for _, w := range []struct{ step, want string }{
		{"evil", `fatal: remote error: claude-sandbox: push refused: the remote "evil" is a repository where the sandbox writes (` + evil + `, in ` + proj + `): the host's git would run its hooks`},
		{"linked", `fatal: remote error: claude-sandbox: push refused: the remote "linked" is a repository where the sandbox writes (` + link + `, in ` + proj + `): the host's git would run its hooks`},
		{"later", `fatal: remote error: claude-sandbox: push refused: the remote "later" is a repository where the sandbox writes`},
		{"other", `fatal: 'nowhere' does not appear to be a git repository`},
	} {
		if got := steps[w.step]; !strings.Contains(got, w.want) || !strings.HasSuffix(got, "rc=128\n") {
			t.Errorf("step %s:\n%s\nwant a line with %q and rc=128", w.step, got, w.want)
		}
	}
	ents, _ := os.ReadDir(markers)
	for _, e := range ents {
		t.Errorf("the host ran the agent's hook %s", e.Name())
	}
}
