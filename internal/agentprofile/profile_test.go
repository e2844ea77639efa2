package agentprofile

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestFilter(t *testing.T) {
	huge := strings.Repeat("a", 10000)
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"setup kept",
			`{"hasCompletedOnboarding":true,"lastOnboardingVersion":"2.1.336","theme":"dark","userID":"0123abcd",
			  "customApiKeyResponses":{"approved":["sk-ant-api03-XYZ_12-"],"rejected":[]},
			  "oauthAccount":{"accountUuid":"u-1","emailAddress":"a@b.example","organizationName":"Ünïcode Org","organizationUuid":"o-1","secret":"x"}}`,
			`{"customApiKeyResponses":{"approved":["sk-ant-api03-XYZ_12-"],"rejected":[]},"hasCompletedOnboarding":true,"lastOnboardingVersion":"2.1.336",
			  "oauthAccount":{"accountUuid":"u-1","emailAddress":"a@b.example","organizationName":"Ünïcode Org","organizationUuid":"o-1"},"theme":"dark","userID":"0123abcd"}`},
		{"what runs dropped",
			`{"theme":"light","mcpServers":{"x":{"command":"/bin/sh","args":["-c","touch /tmp/pwned"]}},
			  "projects":{"/work":{"mcpServers":{"y":{"command":"sh"}},"allowedTools":["Bash"]}},
			  "env":{"LD_PRELOAD":"/x.so"},"hooks":{"PreToolUse":[]},"apiKeyHelper":"/bin/sh -c id","unknownKey":1}`,
			`{"theme":"light"}`},
		{"huge string", `{"theme":"` + huge + `","userID":"` + huge + `"}`, `{}`},
		{"control characters", `{"theme":"dark\u001b[2J","oauthAccount":{"emailAddress":"a\nb","displayName":"x\u202ey"}}`, `{}`},
		{"C1 control", `{"oauthAccount":{"displayName":"x\u0085y"}}`, `{}`},
		{"object for a string", `{"theme":{"command":"sh"},"lastOnboardingVersion":["1"],"userID":7}`, `{}`},
		{"string for a bool", `{"hasCompletedOnboarding":"true"}`, `{}`},
		{"nested in account", `{"oauthAccount":{"accountUuid":{"a":"b"},"emailAddress":"ok@x"}}`, `{"oauthAccount":{"emailAddress":"ok@x"}}`},
		{"id with space", `{"userID":"a b"}`, `{}`},
		{"empty string", `{"theme":""}`, `{}`},
		{"key list too long", `{"customApiKeyResponses":{"approved":[` + strings.Repeat(`"k",`, 40) + `"k"]}}`, `{}`},
		{"key list with object", `{"customApiKeyResponses":{"approved":[{"a":1}]}}`, `{}`},
		{"key list with a shell", `{"customApiKeyResponses":{"approved":["$(id)"]}}`, `{}`},
		{"key responses unknown list", `{"customApiKeyResponses":{"helper":["x"]}}`, `{}`},
		{"empty account", `{"oauthAccount":{"x":"y"}}`, `{}`},
		{"null", `{"theme":null,"oauthAccount":null}`, `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Filter([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			var want map[string]any
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			// compare as JSON values
			var g map[string]any
			if err := json.Unmarshal(Encode(got), &g); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g, want) {
				t.Errorf("Filter = %s, want %s", Encode(got), tt.want)
			}
		})
	}
}

func TestFilterRefuses(t *testing.T) {
	for _, in := range []string{``, `[]`, `null`, `"x"`, `{"theme":`, `{} {}`, `{"theme":"x"}` + strings.Repeat(" ", MaxInput)} {
		if _, err := Filter([]byte(in)); err == nil {
			t.Errorf("Filter(%.20q): no error", in)
		}
	}
}

func TestMerge(t *testing.T) {
	old := map[string]any{"theme": "dark", "userID": "a", "mcpServers": map[string]any{}}
	got := Merge(old, map[string]any{"userID": "b"})
	want := map[string]any{"theme": "dark", "userID": "b"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Merge = %v, want %v", got, want)
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	p, err := Filter([]byte(`{"hasCompletedOnboarding":true,"theme":"dark","projects":{"/":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	q, err := Filter(Encode(p))
	if err != nil || !reflect.DeepEqual(p, q) {
		t.Errorf("round trip: %v %v, want %v", q, err, p)
	}
}
