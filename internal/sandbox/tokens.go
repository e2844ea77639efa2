package sandbox

import (
	"fmt"
	"sort"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/sandboxcfg"
)

// Token variables hold credentials for services other than the agent's
// own: a forge, a package registry, a cloud. The launcher does not pass
// them into the sandbox unless the config keeps one (`keepenv NAME`);
// credential files are hidden the same way (toolchains.go). They are
// removed from the chain too, since the sandbox reads what bwrap was
// started with in /proc/1/environ.
var tokenNames = map[string]bool{
	"GITHUB_TOKEN": true, "GH_TOKEN": true, "GH_ENTERPRISE_TOKEN": true, "GITHUB_ENTERPRISE_TOKEN": true,
	"GITLAB_TOKEN": true, "CI_JOB_TOKEN": true,
	"NPM_TOKEN": true, "NODE_AUTH_TOKEN": true, "CARGO_REGISTRY_TOKEN": true,
	"AWS_SECRET_ACCESS_KEY": true, "AWS_SESSION_TOKEN": true, "AWS_SECURITY_TOKEN": true,
	"AZURE_CLIENT_SECRET": true, "AZURE_PASSWORD": true, "AZURE_CLIENT_CERTIFICATE_PASSWORD": true,
	"AZURE_CLIENT_CERTIFICATE_PATH": true, "AZURE_STORAGE_KEY": true, "AZURE_STORAGE_ACCOUNT_KEY": true,
	"AZURE_STORAGE_CONNECTION_STRING": true, "AZURE_STORAGE_SAS_TOKEN": true,
	"GOOGLE_APPLICATION_CREDENTIALS": true, "GOOGLE_API_KEY": true,
	"HF_TOKEN": true, "HUGGING_FACE_HUB_TOKEN": true, "OPENAI_API_KEY": true,
}

// tokenSuffixes: any name ending so (in any case) is a token variable.
var tokenSuffixes = []string{"_TOKEN", "_SECRET", "_PASSWORD", "_API_KEY"}

// agentLogin are the variables the agent itself logs in with; they are
// passed although they look like tokens.
var agentLogin = map[string]bool{
	"ANTHROPIC_API_KEY": true, "ANTHROPIC_AUTH_TOKEN": true, "CLAUDE_CODE_OAUTH_TOKEN": true,
}

// TokenVar reports whether the launcher removes name as a token variable
// unless the config keeps it.
func TokenVar(name string) bool {
	if agentLogin[name] {
		return false
	}
	if tokenNames[name] {
		return true
	}
	up := strings.ToUpper(name)
	if tokenNames[up] {
		return true
	}
	for _, s := range tokenSuffixes {
		if strings.HasSuffix(up, s) {
			return true
		}
	}
	return false
}

// kept lists the names the config's keepenv directives keep (those whose
// conditions hold; a condition that cannot be decided keeps nothing: the
// config's own pass reports it).
func (l *Launch) kept(h Host, s Spec) map[string]bool {
	keep := map[string]bool{}
	for _, d := range s.Config {
		if d.Name != sandboxcfg.Keepenv {
			continue
		}
		if ok, err := l.holds(h, s, d.When); err != nil || !ok {
			continue
		}
		for _, n := range d.Args {
			keep[n] = true
		}
	}
	return keep
}

// scrubTokens removes the token variables the config does not keep, adds
// them to EnvRemoved and names them (never their values) in a notice.
func (l *Launch) scrubTokens(h Host, s Spec, env *environ) {
	keep := l.kept(h, s)
	var removed []string
	for _, k := range append([]string(nil), env.order...) {
		if TokenVar(k) && !keep[k] {
			env.unset(k)
			removed = append(removed, k)
		}
	}
	if len(removed) == 0 {
		return
	}
	sort.Strings(removed)
	l.EnvRemoved = append(l.EnvRemoved, removed...)
	sort.Strings(l.EnvRemoved)
	l.Notices = append(l.Notices, fmt.Sprintf("not passing token variables into the sandbox: %s (keep one with `keepenv NAME` in %s)", strings.Join(removed, " "), configName(s)))
}

func configName(s Spec) string {
	if s.ConfigName != "" {
		return s.ConfigName
	}
	return "~/.claude-sandbox-init"
}
