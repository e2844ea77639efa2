package sandbox

import (
	"fmt"
	"path/filepath"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
)

// command decides what runs inside: a login shell, the config's command or
// the agent, with the user's arguments; and the chain's environment.
func (l *Launch) command(h Host, s Spec, env, chain *environ, agent string, command []string) error {
	p := &l.Plan
	// A $SHELL that is not visible inside (e.g. from /usr/local) would
	// break the agent's shell tool too.
	sh, _ := env.get("SHELL")
	if !filepath.IsAbs(sh) || !l.Visible(h, sh) {
		sh = "/bin/sh"
		env.set("SHELL", sh)
		chain.set("SHELL", sh)
		p.Ops = append(p.Ops, bwrap.Op{Kind: bwrap.Setenv, Src: "SHELL", Dest: sh})
		l.EnvSet = append(l.EnvSet, "SHELL="+sh)
	}
	if s.Shell {
		l.Command = append([]string{sh, "-l"}, s.Args...)
	} else {
		if command == nil {
			if _, err := h.Stat(agent); err != nil {
				return fmt.Errorf("%s not found: run claude-update", agent)
			}
			command = []string{agent}
		}
		l.Command = append(command, s.Args...)
	}
	l.wrapAgentGit()
	l.Env = chain.list()
	return nil
}
