package sandbox

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseGitConfigParameters(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want [][3]string
	}{
		{"'core.hooksPath'='.githooks'", [][3]string{{"core.hooksPath", ".githooks", "="}}},
		{"'a.b=c' 'x.y'", [][3]string{{"a.b", "c", "="}, {"x.y", "", ""}}},
		{`'alias.q'='!echo '\''hi'\'''`, [][3]string{{"alias.q", "!echo 'hi'", "="}}},
		{"'a.b'='c' broken", [][3]string{{"a.b", "c", "="}}},
		{"", nil},
	} {
		if got := parseGitConfigParameters(tt.in); !cmp.Equal(got, tt.want) {
			t.Errorf("parseGitConfigParameters(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestEnvGitConfig(t *testing.T) {
	env := newEnv([]string{"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=core.hooksPath", "GIT_CONFIG_VALUE_0=.githooks",
		"GIT_CONFIG_KEY_1=diff.X.textconv", "GIT_CONFIG_VALUE_1=tools/tc",
		"GIT_CONFIG_PARAMETERS='include.path'='../x.cfg'"})
	var got []string
	for _, n := range envGitConfig(env) {
		names, _, _ := gitNames(n.e)
		got = append(got, n.file+" "+n.e.Var+" "+n.e.Section+"|"+n.e.Subsection+"|"+n.e.Key+"="+n.e.Value)
		if len(names) == 0 {
			t.Errorf("gitNames(%v) names nothing", n.e)
		}
	}
	want := []string{
		"$GIT_CONFIG_PARAMETERS include.path include||path=../x.cfg",
		"$GIT_CONFIG_KEY_0 core.hooksPath core||hookspath=.githooks",
		"$GIT_CONFIG_KEY_1 diff.X.textconv diff|X|textconv=tools/tc",
	}
	if !cmp.Equal(got, want) {
		t.Errorf("envGitConfig = %q, want %q", got, want)
	}
}
