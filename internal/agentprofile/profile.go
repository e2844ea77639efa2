// Package agentprofile keeps the agent's own setup (onboarding done,
// theme, the account's identifying metadata, the approval of the API key
// in use) across per-project homes, by allowlist: only keys known to be
// data, each checked for type, size and characters, travel from one
// project's ~/.claude.json to the next project's new home. Everything
// else (mcpServers, projects, env, hooks, apiKeyHelper, any key not named
// here) names something that runs or is unknown, and never travels.
//
// The package is pure: it turns bytes into bytes. Reading the project's
// file through an fd and writing the profile is the launcher's.
package agentprofile

import (
	"encoding/json"
	"fmt"
	"sort"
	"unicode"
	"unicode/utf8"
)

// MaxInput bounds the ~/.claude.json read from a project's home: a larger
// file leaves the profile as it was.
const MaxInput = 4 << 20

// kind is what a key's value must be.
type kind int

const (
	kBool kind = iota
	kVersion
	kWord
	kID
	kText
	kAccount
	kKeyResponses
)

// Keys are the top-level keys of ~/.claude.json that the profile keeps,
// and what each value must be.
var Keys = map[string]kind{
	"hasCompletedOnboarding":        kBool,
	"lastOnboardingVersion":         kVersion,
	"lastReleaseNotesSeen":          kVersion,
	"theme":                         kWord,
	"editorMode":                    kWord,
	"preferredNotifChannel":         kWord,
	"verbose":                       kBool,
	"userID":                        kID,
	"oauthAccount":                  kAccount,
	"customApiKeyResponses":         kKeyResponses,
	"hasSeenTasksHint":              kBool,
	"shiftEnterKeyBindingInstalled": kBool,
}

// accountKeys are the keys of oauthAccount kept: identifying metadata,
// short strings.
var accountKeys = map[string]kind{
	"accountUuid":      kID,
	"emailAddress":     kText,
	"organizationUuid": kID,
	"organizationName": kText,
	"organizationRole": kWord,
	"workspaceRole":    kWord,
	"displayName":      kText,
	"billingType":      kWord,
}

const (
	maxText = 256
	maxWord = 64
	maxID   = 128
	// maxKeys bounds each list of customApiKeyResponses: the agent keeps
	// one short suffix per key the user answered for.
	maxKeys = 32
)

// Names returns the kept top-level keys, sorted.
func Names() []string {
	n := make([]string, 0, len(Keys))
	for k := range Keys {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// Filter parses a ~/.claude.json and returns the profile it holds: only
// the allowed keys whose values pass their check, each other key dropped.
// A file that is not one JSON object, or is larger than MaxInput, is an
// error (the caller keeps the profile as it was).
func Filter(b []byte) (map[string]any, error) {
	if len(b) > MaxInput {
		return nil, fmt.Errorf("larger than %d bytes", MaxInput)
	}
	var in map[string]json.RawMessage
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if in == nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	out := map[string]any{}
	for k, raw := range in {
		kd, ok := Keys[k]
		if !ok {
			continue
		}
		if v, ok := check(kd, raw); ok {
			out[k] = v
		}
	}
	return out, nil
}

// Merge returns the profile old updated by new: each key new holds
// replaces old's, and old's others stay (a project whose agent never
// wrote the theme does not forget it). Both must come from Filter.
func Merge(old, new map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range old {
		if _, ok := Keys[k]; ok {
			out[k] = v
		}
	}
	for k, v := range new {
		out[k] = v
	}
	return out
}

// Encode returns the profile as the JSON a new home's ~/.claude.json
// starts with.
func Encode(p map[string]any) []byte {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return []byte("{}\n")
	}
	return append(b, '\n')
}

// check returns raw's value when it is of kind kd.
func check(kd kind, raw json.RawMessage) (any, bool) {
	switch kd {
	case kBool:
		var v bool
		if json.Unmarshal(raw, &v) != nil {
			return nil, false
		}
		return v, true
	case kVersion:
		return str(raw, 32, isVersion)
	case kWord:
		return str(raw, maxWord, isWord)
	case kID:
		return str(raw, maxID, isWord)
	case kText:
		return str(raw, maxText, isText)
	case kAccount:
		var in map[string]json.RawMessage
		if json.Unmarshal(raw, &in) != nil || in == nil {
			return nil, false
		}
		out := map[string]any{}
		for k, r := range in {
			if kd, ok := accountKeys[k]; ok {
				if v, ok := check(kd, r); ok {
					out[k] = v
				}
			}
		}
		if len(out) == 0 {
			return nil, false
		}
		return out, true
	case kKeyResponses:
		var in map[string]json.RawMessage
		if json.Unmarshal(raw, &in) != nil || in == nil {
			return nil, false
		}
		out := map[string]any{}
		for _, k := range []string{"approved", "rejected"} {
			r, ok := in[k]
			if !ok {
				continue
			}
			l, ok := suffixes(r)
			if !ok {
				return nil, false
			}
			out[k] = l
		}
		if len(out) == 0 {
			return nil, false
		}
		return out, true
	}
	return nil, false
}

// suffixes returns raw as a list of at most maxKeys key suffixes.
func suffixes(raw json.RawMessage) ([]string, bool) {
	var l []json.RawMessage
	if json.Unmarshal(raw, &l) != nil || len(l) > maxKeys {
		return nil, false
	}
	out := []string{}
	for _, r := range l {
		v, ok := str(r, maxWord, isWord)
		if !ok {
			return nil, false
		}
		out = append(out, v.(string))
	}
	return out, true
}

// str returns raw as a non-empty string of at most max bytes whose every
// byte passes ok.
func str(raw json.RawMessage, max int, ok func(rune) bool) (any, bool) {
	var v string
	if json.Unmarshal(raw, &v) != nil || v == "" || len(v) > max || !utf8.ValidString(v) {
		return nil, false
	}
	for _, c := range v {
		if !ok(c) {
			return nil, false
		}
	}
	return v, true
}

func isWord(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
}

func isVersion(c rune) bool {
	return c >= '0' && c <= '9' || c == '.' || c >= 'a' && c <= 'z' || c == '-'
}

// isText admits printable characters (names and addresses, in any
// script), never a control, format (bidirectional override) or
// replacement character.
func isText(c rune) bool {
	return unicode.IsPrint(c) && !unicode.Is(unicode.Cf, c) && c != utf8.RuneError
}
