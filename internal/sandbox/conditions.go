package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/linkwalk"
	qt "github.com/claude-sandbox/claude-sandbox/internal/quote"
	"github.com/claude-sandbox/claude-sandbox/internal/sandboxcfg"
)

// holds reports whether every condition of a config line holds now.
func (l *Launch) holds(h Host, s Spec, conds []sandboxcfg.Cond) (bool, error) {
	for _, c := range conds {
		var ok bool
		switch c.Name {
		case sandboxcfg.PwdUnder:
			// The working directory is physical: below DIR as
			// written, DIR holds no symlink on its way.
			ok = under(s.Pwd, c.Path)
			if !ok {
				// Through a symlink only where the agent cannot
				// have made or moved it (an agent in ~/src/mono
				// replaces services/payments with a link to the
				// home, and every project is below it).
				if link, w := l.steeringLink(h, s, c.Path); link != "" {
					l.notice(fmt.Sprintf("%s:%d: pwd-under: %s is reached through the symlink %s in %s, which the sandbox can write: not followed (the condition is false); name the real directory",
						s.ConfigName, c.Line, qt.String(c.Path), qt.String(link), qt.String(w)))
				} else if real, _, err := linkwalk.Resolve(h, c.Path); err == nil {
					ok = under(s.Pwd, real)
				}
			}
		case sandboxcfg.Exists:
			// The agent must not decide which lines apply.
			if w := l.agentDecides(h, s, c.Path); w != "" {
				return false, &sandboxcfg.Error{Name: s.ConfigName, Line: c.Line, Msg: fmt.Sprintf(
					"exists: %s lies in %s, which the sandbox can write: the agent could decide this condition: test a path outside it", c.Path, w)}
			}
			_, err := h.Stat(c.Path)
			ok = err == nil
		default:
			return false, &sandboxcfg.Error{Name: s.ConfigName, Line: c.Line, Msg: fmt.Sprintf("unknown condition %q", c.Name)}
		}
		if ok == c.Not {
			return false, nil
		}
	}
	return true, nil
}

// agentDecides returns the writable mount (host path) in which the entry
// at path, or an entry on the way to it, lies, or "" if none does: there
// the agent can create, remove or relink it. An entry counts by its name
// and by where it physically is (its directory resolved). A directory
// below the home but for its dot-directories counts as well (~/src for
// ~/src/x/flag): it is the default project of a start there.
func (l *Launch) agentDecides(h Host, s Spec, path string) string {
	var roots []string
	ms, _ := writableMounts(s)
	for _, m := range ms {
		roots = append(roots, m.host)
	}
	for _, o := range l.Plan.Ops {
		if o.IsWritable() {
			roots = append(roots, o.Src)
		}
	}
	for i, r := range roots {
		// As the kernel resolves it: a root through a dangling link
		// is where the agent makes it.
		if real, _, err := linkwalk.Resolve(h, filepath.Clean(r)); err == nil {
			roots = append(roots, real)
		}
		roots[i] = filepath.Clean(r)
	}
	q := "/"
	var all []string
	for _, c := range strings.Split(strings.TrimPrefix(filepath.Clean(path), "/"), "/") {
		if c == "" {
			continue
		}
		q = filepath.Join(q, c)
		cands := []string{q}
		if d, _, err := linkwalk.Resolve(h, filepath.Dir(q)); err == nil {
			cands = append(cands, filepath.Join(d, c))
		} else {
			// What cannot be resolved counts as inside.
			return filepath.Dir(q)
		}
		for _, cand := range cands {
			for _, r := range roots {
				if under(cand, r) {
					return r
				}
			}
		}
		all = append(all, cands...)
	}
	// Any directory below the home but its dot-directories is the
	// project of a start there: an earlier sandbox may have written it.
	for _, cand := range all {
		if rel, ok := strings.CutPrefix(cand, s.Home+"/"); ok {
			if top, _, deeper := strings.Cut(rel, "/"); deeper && !strings.HasPrefix(top, ".") {
				return filepath.Join(s.Home, top)
			}
		}
	}
	return ""
}

// steeringLink returns the first symlink followed on the way to path that
// lies where the agent decides (agentDecides), and that place; "" if none.
func (l *Launch) steeringLink(h Host, s Spec, path string) (link, where string) {
	linkwalk.Walk(h, path, func(next string) error {
		if w := l.agentDecides(h, s, next); w != "" {
			link, where = next, w
			return errSteered
		}
		return nil
	})
	return link, where
}

// errSteered stops steeringLink's walk at the first link the agent decides.
var errSteered = errors.New("steered")

// notice adds a notice once.
func (l *Launch) notice(msg string) {
	for _, n := range l.Notices {
		if n == msg {
			return
		}
	}
	l.Notices = append(l.Notices, msg)
}

// setting returns the arguments of the last directive called name whose
// conditions hold, and where it was said ("FILE:LINE"); def and "the
// default" when none does.
func (l *Launch) setting(h Host, s Spec, name string, def []string) ([]string, string, error) {
	args, from := def, "the default"
	for _, d := range s.Config {
		if d.Name != name {
			continue
		}
		ok, err := l.holds(h, s, d.When)
		if err != nil {
			return nil, "", err
		}
		if ok {
			args, from = d.Args, fmt.Sprintf("%s:%d", s.ConfigName, d.Line)
		}
	}
	return args, from, nil
}
