package doctor

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/buildinfo"
	"github.com/claude-sandbox/claude-sandbox/internal/quote"
	"github.com/claude-sandbox/claude-sandbox/internal/sandbox"
	"github.com/claude-sandbox/claude-sandbox/internal/toolchain"
)

// sandboxWritable returns the launcher's places the sandbox writes, as
// its knobs set them: the per-project homes, the shared sandbox home
// (CLAUDE_SBX_HOME) and the private tmp (CLAUDE_SBX_TMP). A PATH
// directory in one is visible inside anyway, never a toolchain.
func sandboxWritable(h Host, home string) []string {
	var out []string
	sbxHome := h.Getenv("CLAUDE_SBX_HOME")
	if sbxHome == "" {
		sbxHome = buildinfo.HomeName
	}
	if home != "" {
		out = append(out, filepath.Join(home, sandbox.HomesName))
		if !filepath.IsAbs(sbxHome) {
			sbxHome = filepath.Join(home, sbxHome)
		}
	}
	if filepath.IsAbs(sbxHome) {
		out = append(out, filepath.Clean(sbxHome))
	}
	// Without CLAUDE_SBX_TMP, /tmp is a tmpfs of the sandbox's own; the
	// directory earlier launchers used holds what earlier sandboxes wrote.
	tmp := h.Getenv("CLAUDE_SBX_TMP")
	if tmp == "" {
		tmp = sandbox.LegacyTmp(h.UID())
	}
	if filepath.IsAbs(tmp) {
		out = append(out, filepath.Clean(tmp))
	}
	return out
}

// toolchainsFix is what to do about a PATH directory left out.
const toolchainsFix = "bind it yourself with a ro line in ~/.claude-sandbox-init if it holds no secret, or take it off your PATH (see Toolchains in docs/launcher.md)"

// checkToolchains lists the toolchains the launcher shows read-only for
// this user's PATH (toolchains auto), with toolchain.Make as the launcher
// calls it, and what it leaves out and why. It never fails: a toolchain
// left out only means the agent cannot run it. Config directives
// (toolchains off or a list, ro lines) and the project's directory, which
// the launcher also weighs, are not read here.
func checkToolchains(s *state) Result {
	r := Result{Check: "toolchains", Status: OK}
	if s.root {
		r.Status = Skip
		r.Message = "root's PATH is not the user's"
		r.Fix = fixAsUser
		return r
	}
	home := s.h.Getenv("HOME")
	path := s.h.Getenv("PATH")
	writable := sandboxWritable(s.h, home)
	bin := filepath.Clean(s.c.BinDir)
	plan := toolchain.Make(s.h.Tree(), toolchain.Input{
		Home: home,
		Dirs: filepath.SplitList(path),
		Visible: func(p string) bool {
			return sandbox.SystemVisible(p) || p == bin || strings.HasPrefix(p, bin+"/")
		},
		Writable: writable,
	})
	var shown []string
	for _, t := range plan.Toolchains {
		roots := make([]string, len(t.Roots))
		for i, p := range t.Roots {
			roots[i] = quote.String(p)
		}
		shown = append(shown, fmt.Sprintf("%s (%s, from %s)", quote.String(t.Name), strings.Join(roots, " "), quote.String(t.Why)))
	}
	var left []string
	for _, sk := range plan.Skipped {
		left = append(left, fmt.Sprintf("%s %s", quote.String(sk.Path), quote.String(sk.Why)))
		if sk.Why != "does not exist" {
			r.Status = Warn
			r.Fix = toolchainsFix
		}
	}
	switch len(shown) {
	case 0:
		r.Message = "no toolchain of your PATH needs showing: the sandbox has the system's"
	default:
		r.Message = fmt.Sprintf("shown read-only from your PATH: %s", strings.Join(shown, "; "))
	}
	if len(left) > 0 {
		r.Message += "; left out: " + strings.Join(left, "; ")
	}
	return r
}
