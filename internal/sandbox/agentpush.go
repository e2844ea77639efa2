package sandbox

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
	"github.com/claude-sandbox/claude-sandbox/internal/sandboxcfg"
)

// With `git push REMOTE [PATTERN...] [ci]` lines and `git commit`, the
// agent's `git push REMOTE BRANCH:agent/NAME` reaches the launcher: the
// agent's repository has REMOTE as sbx::REMOTE, which runs the remote
// helper git-remote-sbx (the launcher's own executable, bound read-only
// at InsidePushBin), which carries git's push protocol (objects and ref
// updates, never a command line) over the socket in InsidePushDir. On the
// host the launcher receives it into a bare repository of its own and
// pushes what its checks let through with the user's git and credentials.

// Where the push socket's directory and the remote helper are inside.
const (
	InsidePushDir = "/run/claude-sandbox/push"
	InsidePushBin = "/run/claude-sandbox/bin"
	// PushHelper is the remote helper's name: git runs git-remote-sbx for
	// a remote whose URL is sbx::NAME.
	PushHelper = "git-remote-sbx"
	// PushSocket is the socket's name in PushDir's sock.d.
	PushSocket = "sock"
)

// PushRule is one `git push` line that applies.
type PushRule struct {
	Remote   string
	Patterns []string // branches, without refs/heads/; at least one
	CI       bool     // pushes may change CI definitions
	CIPaths  []string // the CI definitions no push may change (unless CI)
	Origin   string   // the config line
}

// DefaultCIPaths are the CI definitions of the forges, which they run
// with the repository's secrets on a push: a pushed branch must not
// change them unless its git push line ends in ci.
var DefaultCIPaths = []string{
	".github/workflows/", ".github/actions/", ".gitlab-ci.yml", ".gitlab/ci/", ".circleci/",
	"Jenkinsfile", "azure-pipelines.yml", ".azure-pipelines/", ".buildkite/", ".drone.yml",
	"bitbucket-pipelines.yml", ".travis.yml", ".woodpecker/", ".woodpecker.yml", ".forgejo/workflows/", ".gitea/workflows/",
	".builds/", ".build.yml", ".cirrus.yml", ".cirrus.star", "appveyor.yml", ".appveyor.yml", ".semaphore/", ".teamcity/",
	"cloudbuild.yaml", "cloudbuild.yml", "buildspec.yml", "codemagic.yaml", ".gitlab-ci.yaml",
}

// PushDir returns the host directory of the launcher's push state for the
// agent's repository agent: sock.d (bound inside) and staging.git (never).
func PushDir(agent string) string { return strings.TrimSuffix(agent, ".git") + ".push" }

// pushRules returns the `git push` lines that apply, the last line of a
// remote winning.
func (l *Launch) pushRules(h Host, s Spec) ([]PushRule, error) {
	var out []PushRule
	for _, d := range s.Config {
		if d.Name != sandboxcfg.GitPush {
			continue
		}
		ok, err := l.holds(h, s, d.When)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		r := PushRule{Remote: d.Args[0], Origin: fmt.Sprintf("%s:%d", s.ConfigName, d.Line)}
		pats := d.Args[1:]
		if n := len(pats); n > 0 && pats[n-1] == sandboxcfg.GitPushCI {
			r.CI, pats = true, pats[:n-1]
		}
		r.CIPaths = slices.Clone(DefaultCIPaths)
		for _, p := range pats {
			if c, ok := strings.CutPrefix(p, sandboxcfg.GitPushCIPath); ok {
				r.CIPaths = append(r.CIPaths, c)
			} else {
				r.Patterns = append(r.Patterns, p)
			}
		}
		if len(r.Patterns) == 0 {
			r.Patterns = []string{sandboxcfg.GitPushDefault}
		}
		for i := range out {
			if out[i].Remote == r.Remote {
				out = append(out[:i], out[i+1:]...)
				break
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// usePush adds the socket's directory and the remote helper, if `git push`
// lines apply; agent is the agent's repository and project the user's, on
// the host.
func (l *Launch) usePush(h Host, s Spec, agent, project string) error {
	rules, err := l.pushRules(h, s)
	if err != nil || len(rules) == 0 {
		return err
	}
	if s.Launcher == "" {
		return fmt.Errorf("git push (%s): the launcher's own executable is unknown, and it is the remote helper inside: run claude by its path", rules[0].Origin)
	}
	ms, err := writableMounts(s)
	if err != nil {
		return err
	}
	l.PushWritable = nil
	for _, m := range ms {
		l.PushWritable = append(l.PushWritable, m.host)
	}
	dir := PushDir(agent)
	l.Plan.Ops = append(l.Plan.Ops,
		bwrap.Op{Kind: bwrap.ROBind, Src: filepath.Join(dir, "sock.d"), Dest: InsidePushDir},
		bwrap.Op{Kind: bwrap.ROBind, Src: s.Launcher, Dest: filepath.Join(InsidePushBin, PushHelper)},
	)
	l.Pushes, l.PushDir, l.PushProject = rules, dir, project
	for _, r := range rules {
		l.Notes = append(l.Notes, fmt.Sprintf("git push (%s): the agent's git push %s BRANCH reaches the launcher, which pushes branches matching %s to your remote %s with your git%s; every push is in claude-sandbox git log",
			r.Origin, r.Remote, strings.Join(r.Patterns, " "), r.Remote, map[bool]string{true: " (CI definitions may change)", false: ", refusing changes to CI definitions"}[r.CI]))
	}
	return nil
}

// WritableSources returns the host directories the sandbox can write, as
// the plan names them: its binds, and with git push lines every home and
// /tmp of the sandboxes (which other starts wrote).
func (l *Launch) WritableSources() []string {
	out := slices.Clone(l.PushWritable)
	for _, o := range l.Plan.Ops {
		if writableBind(o) {
			out = append(out, o.Src)
		}
	}
	return out
}
