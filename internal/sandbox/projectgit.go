package sandbox

import "fmt"

// finishProject runs after the config: it starts in the working directory
// if the config showed it, says so if nothing did, and keeps every git
// repository the sandbox can write from being turned against the host.
func (l *Launch) finishProject(h Host, s Spec, pp projectPlan) error {
	if pp.Dir == "" && s.Pwd != "" && s.Pwd != s.Home && l.shows(s.Pwd) {
		if l.Plan.Chdir == s.Home {
			l.Plan.Chdir = s.Pwd
		}
		pp.notShown = ""
	}
	if pp.notShown != "" {
		msg := fmt.Sprintf("the working directory %s is not visible in the sandbox: %s", s.Pwd, pp.notShown)
		if pp.fix != "" {
			msg += "; " + pp.fix
		}
		if s.Pwd == "" {
			msg = "the working directory is not visible in the sandbox: " + pp.notShown
		}
		l.Notices = append(l.Notices, msg)
	}
	return l.protectGit(h, s, pp)
}
