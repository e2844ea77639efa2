// Package git is `claude-sandbox git`: `log` prints the agent's pushes
// (git push lines in ~/.claude-sandbox-init), and `pre-receive` is the
// hook of the launcher's staging repository, which checks each ref the
// agent pushes and then pushes it with the user's git.
package git

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/pushlog"
	"github.com/claude-sandbox/claude-sandbox/internal/sandboxcfg"
)

// Applet is `claude-sandbox git`.
var Applet = multicall.Applet{Name: "git", Run: run}

const usage = "usage: claude-sandbox git log [--session ID]   (the agent's pushes: time, project, remote, branch, old..new, result)"

func run(ctx context.Context, args []string, stdio multicall.Stdio) error {
	if len(args) == 0 {
		return multicall.Usagef("%s", usage)
	}
	switch args[0] {
	case "log":
		session := ""
		switch {
		case len(args) == 3 && args[1] == "--session":
			session = args[2]
		case len(args) != 1:
			return multicall.Usagef("%s", usage)
		}
		return printLog(stdio.Out, session)
	case "pre-receive":
		if os.Getenv(pushlog.EnvURL) == "" {
			return multicall.Usagef("git pre-receive is the hook of the launcher's staging repository; it runs only there")
		}
		return preReceive(ctx, stdio)
	case "-h", "--help", "help":
		fmt.Fprintln(stdio.Out, usage)
		return nil
	}
	return multicall.Usagef("unknown command %q; %s", args[0], usage)
}

func printLog(w io.Writer, session string) error {
	home, err := os.UserHomeDir()
	if err != nil {
		return err
	}
	es, err := pushlog.Read(pushlog.Path(home), session)
	if err != nil {
		return err
	}
	for _, e := range es {
		e.Remote = e.Project + " " + e.Remote
		fmt.Fprintf(w, "%s %s\n", e.Time.Local().Format("2006-01-02 15:04:05"), e.Line())
	}
	return nil
}

// update is one line of the hook's input.
type update struct{ old, new, ref string }

// maxUpdates bounds the refs of one push.
const maxUpdates = 64

// hook is one run of the pre-receive hook.
type hook struct {
	ctx      context.Context
	git      string
	patterns []string
	ciPaths  []string
	ci       bool
	entry    pushlog.Entry
	log      string
	err      io.Writer
}

func preReceive(ctx context.Context, stdio multicall.Stdio) error {
	h := &hook{
		ctx:      ctx,
		git:      os.Getenv(pushlog.EnvGit),
		patterns: lines(os.Getenv(pushlog.EnvPatterns)),
		ciPaths:  lines(os.Getenv(pushlog.EnvCIPaths)),
		ci:       os.Getenv(pushlog.EnvCI) == "1",
		log:      os.Getenv(pushlog.EnvLog),
		err:      stdio.Err,
		entry: pushlog.Entry{
			Session: os.Getenv(pushlog.EnvSession),
			Project: os.Getenv(pushlog.EnvProject),
			Remote:  os.Getenv(pushlog.EnvRemote),
			Push:    os.Getenv(pushlog.EnvPush),
		},
	}
	var ups []update
	sc := bufio.NewScanner(io.LimitReader(stdio.In, 1<<20))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			return h.refuseAll("the push's ref list is not git's")
		}
		ups = append(ups, update{f[0], f[1], f[2]})
		if len(ups) > maxUpdates {
			return h.refuseAll(fmt.Sprintf("more than %d refs in one push", maxUpdates))
		}
	}
	if err := sc.Err(); err != nil {
		return h.refuseAll("reading the push's ref list: " + err.Error())
	}
	refused := false
	whys := make([]string, len(ups))
	for i, u := range ups {
		if whys[i] = h.check(u); whys[i] != "" {
			refused = true
		}
	}
	if refused {
		for i, u := range ups {
			why := whys[i]
			if why == "" {
				why = "another ref of the same push is refused, and a push lands whole or not at all"
			}
			h.record(u, pushlog.Refused, why)
			fmt.Fprintf(h.err, "claude-sandbox: %s: refused: %s\n", u.ref, why)
		}
		return &multicall.ExitError{Code: 1}
	}
	return h.push(ups)
}

// refuseAll refuses a push whose refs are not known or too many.
func (h *hook) refuseAll(why string) error {
	h.record(update{}, pushlog.Refused, why)
	fmt.Fprintf(h.err, "claude-sandbox: push refused: %s\n", why)
	return &multicall.ExitError{Code: 1}
}

func (h *hook) record(u update, result, why string) {
	e := h.entry
	e.Time, e.Ref, e.Old, e.New, e.Result, e.Why = time.Now().UTC(), u.ref, u.old, u.new, result, why
	if err := pushlog.Append(h.log, e); err != nil {
		fmt.Fprintf(h.err, "claude-sandbox: %v\n", err)
	}
}

// check returns why u is refused, "" if it is not.
func (h *hook) check(u update) string {
	branch, ok := strings.CutPrefix(u.ref, "refs/heads/")
	if !ok {
		return "only branches are pushed (tags and other refs stay yours to push)"
	}
	if strings.Trim(u.new, "0") == "" {
		return "a deletion (deleting a branch stays yours to do)"
	}
	matched := false
	for _, p := range h.patterns {
		matched = matched || sandboxcfg.PushPatternMatches(p, branch)
	}
	if !matched {
		return fmt.Sprintf("the branch %s matches none of the git push line's patterns (%s): push to one that does, as in git push %s HEAD:%s", branch, strings.Join(h.patterns, " "), h.entry.Remote, strings.Replace(h.patterns[0], "*", "NAME", 1))
	}
	if strings.Trim(u.old, "0") != "" {
		if _, err := h.run("merge-base", "--is-ancestor", u.old, u.new); err != nil {
			return fmt.Sprintf("not a fast-forward of the remote's %s (force pushes stay yours to do)", branch)
		}
	}
	if h.ci {
		return ""
	}
	// Every commit of the push that the remote does not have yet (its
	// branches are this repository's, fetched before the push).
	args := []string{"log", "--format=commit %H", "--name-only", "--no-renames", u.new, "--not", "--branches", "--"}
	for _, p := range h.ciPaths {
		args = append(args, strings.TrimSuffix(p, "/"))
	}
	out, err := h.run(args...)
	if err != nil {
		return "reading the pushed commits: " + err.Error()
	}
	var commit string
	for _, l := range strings.Split(out, "\n") {
		if c, ok := strings.CutPrefix(l, "commit "); ok {
			commit = c
		} else if l != "" {
			return fmt.Sprintf("commit %s changes %s, a CI definition the forge runs with the repository's secrets (end the git push line with ci to allow it)", pushlog.Short(commit), l)
		}
	}
	return h.checkTip(u)
}

// checkTip returns why the CI definitions in the tree of u.new, which the
// forge runs on the push, are refused: they must be those of a branch the
// remote has, entry for entry (none when it has no branch). The commits
// of the push alone do not tell: a merge by -s ours hides one that
// changes them from git log, and a commit the remote has on one branch
// (or an old one) can become another's tip.
func (h *hook) checkTip(u update) string {
	tips, err := h.run("for-each-ref", "--format=%(objectname)", "refs/heads/")
	if err != nil {
		return "reading the remote's branches: " + err.Error()
	}
	specs := ciSpecs(h.ciPaths)
	revs := append([]string{u.new}, strings.Fields(tips)...)
	var in strings.Builder
	for _, r := range revs {
		for _, sp := range specs {
			fmt.Fprintf(&in, "%s:%s\n", r, sp.path)
		}
	}
	out, err := h.runIn(in.String(), "cat-file", "--batch-check=%(objectname) %(objecttype)")
	if err != nil {
		return "reading the pushed commit's CI definitions: " + err.Error()
	}
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(got) != len(revs)*len(specs) {
		return "reading the pushed commit's CI definitions: git cat-file answered " + fmt.Sprint(len(got)) + " lines"
	}
	sig := func(i int) []string {
		s := make([]string, len(specs))
		for j, sp := range specs {
			l := got[i*len(specs)+j]
			switch {
			case strings.HasSuffix(l, " missing"):
				s[j] = "missing"
			case sp.leading && strings.HasSuffix(l, " tree"):
				// A directory on the way: what it holds
				// beside the definitions is not theirs.
				s[j] = "missing"
			default:
				s[j] = l
			}
		}
		return s
	}
	pushed := sig(0)
	base := make([]string, len(specs))
	for j := range base {
		base[j] = "missing"
	}
	for i := 1; i < len(revs); i++ {
		t := sig(i)
		if slices.Equal(pushed, t) {
			return ""
		}
		if i == 1 {
			base = t
		}
	}
	if len(revs) == 1 && slices.Equal(pushed, base) {
		return ""
	}
	var diff []string
	for j, sp := range specs {
		if pushed[j] != base[j] {
			diff = append(diff, sp.path)
		}
	}
	return fmt.Sprintf("the CI definitions of %s differ from those of every branch of the remote: the forge would run them with the repository's secrets (end the git push line with ci to allow it)", strings.Join(diff, ", "))
}

// ciSpec is a path whose entry in a tree the tip check compares: a CI
// definition, or a directory on the way to one (only whether it is a
// directory counts: a symlink there is refused).
type ciSpec struct {
	path    string
	leading bool
}

func ciSpecs(paths []string) []ciSpec {
	var out []ciSpec
	seen := map[string]bool{}
	for _, p := range paths {
		p = strings.Trim(p, "/")
		parts := strings.Split(p, "/")
		for i := 1; i <= len(parts); i++ {
			q := strings.Join(parts[:i], "/")
			if q == "" || seen[q] {
				continue
			}
			seen[q] = true
			out = append(out, ciSpec{path: q, leading: i < len(parts)})
		}
	}
	return out
}

// run runs the user's git in the staging repository, in the
// environment receive-pack gave the hook (only the staging repository's
// config), and returns its output.
func (h *hook) run(args ...string) (string, error) { return h.runIn("", args...) }

// runIn is run with stdin.
func (h *hook) runIn(stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(h.ctx, h.git, args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "GIT_LITERAL_PATHSPECS=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", errors.New(pushlog.LastLine(errb.String(), err))
	}
	return out.String(), nil
}

// push pushes ups to the remote with the user's git and config (their
// credential helper, ssh-agent, insteadOf), plain: never forced.
func (h *hook) push(ups []update) error {
	url := os.Getenv(pushlog.EnvURL)
	args := []string{"push", "--porcelain", "--no-verify", url}
	for _, u := range ups {
		args = append(args, u.new+":"+u.ref)
	}
	cmd := exec.CommandContext(h.ctx, h.git, args...)
	cmd.Env = userEnv(os.Environ())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	status := porcelain(out.String())
	for _, u := range ups {
		st, ok := status[u.ref]
		switch {
		case ok && st.ok:
			h.record(u, pushlog.Pushed, "")
			fmt.Fprintf(h.err, "claude-sandbox: %s: pushed to %s\n", u.ref, h.entry.Remote)
		default:
			why := st.summary
			if !ok {
				why = pushlog.Redact(pushlog.LastLine(errb.String(), err), url)
			}
			h.record(u, pushlog.Failed, why)
			fmt.Fprintf(h.err, "claude-sandbox: %s: the push to %s failed: %s\n", u.ref, h.entry.Remote, why)
		}
	}
	if err != nil {
		return &multicall.ExitError{Code: 1}
	}
	return nil
}

type refStatus struct {
	ok      bool
	summary string
}

// porcelain reads git push --porcelain: "FLAG\tFROM:TO\tSUMMARY" per ref.
func porcelain(out string) map[string]refStatus {
	m := map[string]refStatus{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.SplitN(l, "\t", 3)
		if len(f) != 3 {
			continue
		}
		_, to, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		flag := strings.TrimSpace(f[0])
		m[to] = refStatus{ok: flag == "" || flag == "*" || flag == "=", summary: f[2]}
	}
	return m
}

// userEnv is env as the user had it: without the launcher's variables
// and with the user's own values of those it isolated receive-pack from.
func userEnv(env []string) []string {
	var out, saved []string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, pushlog.EnvSaved):
			saved = append(saved, strings.TrimPrefix(k, pushlog.EnvSaved)+"="+v)
		// The quarantine forbids ref updates: a local remote's
		// receive-pack would inherit it (git does not clear it), and
		// the push updates no ref here.
		case strings.HasPrefix(k, pushlog.EnvPrefix), k == "GIT_CONFIG_NOSYSTEM", k == "GIT_CONFIG_GLOBAL", k == "GIT_LITERAL_PATHSPECS", k == "GIT_QUARANTINE_PATH":
		default:
			out = append(out, kv)
		}
	}
	return append(append(out, saved...), "GIT_TERMINAL_PROMPT=0")
}

func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}
