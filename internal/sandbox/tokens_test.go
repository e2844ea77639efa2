package sandbox

import (
	"bytes"
	"strings"
	"testing"
)

func TestTokenVar(t *testing.T) {
	for name, want := range map[string]bool{
		"GITHUB_TOKEN": true, "GH_TOKEN": true, "GITLAB_TOKEN": true, "NPM_TOKEN": true, "NODE_AUTH_TOKEN": true,
		"CARGO_REGISTRY_TOKEN": true, "AWS_SECRET_ACCESS_KEY": true, "AWS_SESSION_TOKEN": true,
		"AZURE_CLIENT_SECRET": true, "AZURE_PASSWORD": true, "AZURE_STORAGE_CONNECTION_STRING": true,
		"GOOGLE_APPLICATION_CREDENTIALS": true, "HF_TOKEN": true, "OPENAI_API_KEY": true,
		"MY_SERVICE_TOKEN": true, "DB_PASSWORD": true, "APP_SECRET": true, "STRIPE_API_KEY": true, "github_token": true,
		// What the agent logs in with, and what is no secret.
		"ANTHROPIC_API_KEY": false, "ANTHROPIC_AUTH_TOKEN": false, "CLAUDE_CODE_OAUTH_TOKEN": false,
		"AWS_ACCESS_KEY_ID": false, "AWS_REGION": false, "PATH": false, "HOME": false, "TOKEN_URL": false, "EDITOR": false,
	} {
		if got := TokenVar(name); got != want {
			t.Errorf("TokenVar(%q) = %v, want %v", name, got, want)
		}
	}
}

// Token variables reach neither the sandbox nor the chain (the sandbox
// reads bwrap's environment in /proc/1/environ); the notice and the dry
// run name them, never their values; keepenv keeps one, under its
// conditions.
func TestTokenVarsRemoved(t *testing.T) {
	const secret = "PLANTEDSECRETVALUE"
	tokens := []string{"GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "MY_SERVICE_TOKEN", "HF_TOKEN"}
	for _, tt := range []struct {
		name, config string
		kept         []string
	}{
		{"default", "", nil},
		{"keepenv", "keepenv GITHUB_TOKEN\n", []string{"GITHUB_TOKEN"}},
		{"keepenv many", "keepenv GITHUB_TOKEN HF_TOKEN\n", []string{"GITHUB_TOKEN", "HF_TOKEN"}},
		{"keepenv elsewhere", "if pwd-under /nowhere\nkeepenv GITHUB_TOKEN\nend\n", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := baseSpec()
			s.Environ = append([]string(nil), baseEnv...)
			for _, k := range tokens {
				s.Environ = append(s.Environ, k+"="+secret+k)
			}
			s.Environ = append(s.Environ, "ANTHROPIC_API_KEY=sk-ant-login", "CLAUDE_CODE_OAUTH_TOKEN=oauth")
			s.Config = parseConfig(t, s, tt.config)
			l, err := Build(debianHost(), s)
			if err != nil {
				t.Fatal(err)
			}
			env := envMap(l.Env)
			keep := map[string]bool{}
			for _, k := range tt.kept {
				keep[k] = true
			}
			var removed []string
			for _, k := range tokens {
				_, ok := env[k]
				if ok != keep[k] {
					t.Errorf("chain env has %s: %v, want %v", k, ok, keep[k])
				}
				if !keep[k] {
					removed = append(removed, k)
				}
			}
			for _, k := range []string{"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"} {
				if _, ok := env[k]; !ok {
					t.Errorf("the agent's login %s was removed", k)
				}
			}
			var dry bytes.Buffer
			if err := l.WriteDryRun(&dry, "/usr/bin/bwrap", 10); err != nil {
				t.Fatal(err)
			}
			out := dry.String() + strings.Join(l.Notices, "\n")
			if strings.Contains(out, secret) {
				t.Errorf("a value is shown:\n%s", out)
			}
			notice := ""
			for _, n := range l.Notices {
				if strings.HasPrefix(n, "not passing token variables") {
					notice = n
				}
			}
			if len(removed) == 0 {
				if notice != "" {
					t.Errorf("notice %q, want none", notice)
				}
				return
			}
			for _, k := range removed {
				if !strings.Contains(notice, " "+k) {
					t.Errorf("notice %q does not name %s", notice, k)
				}
				if !strings.Contains(strings.Join(l.EnvRemoved, " "), k) {
					t.Errorf("EnvRemoved %q lacks %s", l.EnvRemoved, k)
				}
			}
			if !strings.Contains(dry.String(), "# "+notice+"\n") {
				t.Errorf("dry run lacks the notice %q:\n%s", notice, dry.String())
			}
		})
	}
}
