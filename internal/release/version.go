// Package release knows the agent's official release channel: version
// strings, channel files, the per-version manifest, the platforms, and the
// OpenPGP signature over the manifest with its pinned key.
//
// Facts (verified from public sources, see the claude-update issue):
//   - Base https://downloads.claude.ai/claude-code-releases; {base}/latest and
//     {base}/stable are plain-text version strings.
//   - {base}/{version}/manifest.json lists, per platform, the binary name,
//     its SHA-256 and size; the binary is at {base}/{version}/{platform}/claude.
//   - From 2.1.89 on, {base}/{version}/manifest.json.sig is a detached
//     OpenPGP signature by the key at
//     https://downloads.claude.ai/keys/claude-code.asc, fingerprint
//     31DD DE24 DDFA B679 F42D 7BD2 BAA9 29FF 1A7E CACE.
package release

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/claude-sandbox/claude-sandbox/internal/quote"
)

// Version is an agent version, MAJOR.MINOR.PATCH with an optional
// -PRERELEASE suffix.
type Version struct {
	Major, Minor, Patch int
	Pre                 string
}

// maxVersionLen bounds what ParseVersion accepts; versions end up in file
// names and messages.
const maxVersionLen = 64

// ParseVersion parses s. Upstream documents versions as
// ^\d+\.\d+\.\d+(-\S+)?$; this is stricter, semantic versioning 2.0.0
// without build metadata: no leading zeros, at most 9 digits a number, and
// a pre-release of dot-separated, non-empty [0-9A-Za-z-] identifiers (the
// numeric ones without leading zeros), because the version becomes part of
// a file name (claude.<version>) and of URLs.
func ParseVersion(s string) (Version, error) {
	if len(s) == 0 || len(s) > maxVersionLen {
		return Version{}, fmt.Errorf("invalid version %q", s)
	}
	core, pre, hasPre := strings.Cut(s, "-")
	if hasPre && !validPre(pre) {
		return Version{}, fmt.Errorf("invalid version %q", s)
	}
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return Version{}, fmt.Errorf("invalid version %q", s)
	}
	var n [3]int
	for i, p := range parts {
		if p == "" || len(p) > 9 || (len(p) > 1 && p[0] == '0') {
			return Version{}, fmt.Errorf("invalid version %q", s)
		}
		for _, c := range p {
			if c < '0' || c > '9' {
				return Version{}, fmt.Errorf("invalid version %q", s)
			}
		}
		n[i], _ = strconv.Atoi(p)
	}
	return Version{Major: n[0], Minor: n[1], Patch: n[2], Pre: pre}, nil
}

// validPre reports whether pre is a semantic-versioning pre-release.
func validPre(pre string) bool {
	for _, id := range strings.Split(pre, ".") {
		if id == "" {
			return false
		}
		numeric := true
		for _, c := range id {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-') {
				return false
			}
			numeric = numeric && c >= '0' && c <= '9'
		}
		if numeric && len(id) > 1 && id[0] == '0' {
			return false
		}
	}
	return true
}

// String returns the version as ParseVersion accepts it.
func (v Version) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	if v.Pre != "" {
		s += "-" + v.Pre
	}
	return s
}

// IsZero reports whether v is the zero Version (no version).
func (v Version) IsZero() bool { return v == Version{} }

// Compare returns -1, 0 or +1 as v sorts before, equal to or after w, with
// semantic-versioning precedence: a pre-release sorts before its release.
func (v Version) Compare(w Version) int {
	for _, d := range [3][2]int{{v.Major, w.Major}, {v.Minor, w.Minor}, {v.Patch, w.Patch}} {
		if d[0] != d[1] {
			if d[0] < d[1] {
				return -1
			}
			return 1
		}
	}
	switch {
	case v.Pre == w.Pre:
		return 0
	case v.Pre == "":
		return 1
	case w.Pre == "":
		return -1
	}
	a, b := strings.Split(v.Pre, "."), strings.Split(w.Pre, ".")
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := comparePre(a[i], b[i]); c != 0 {
			return c
		}
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}

func comparePre(a, b string) int {
	an, aerr := strconv.ParseUint(a, 10, 64)
	bn, berr := strconv.ParseUint(b, 10, 64)
	switch {
	case aerr == nil && berr == nil:
		if an != bn {
			if an < bn {
				return -1
			}
			return 1
		}
		return 0
	case aerr == nil: // numeric identifiers sort before alphanumeric ones
		return -1
	case berr == nil:
		return 1
	}
	return strings.Compare(a, b)
}

// Channels are the channel names upstream publishes.
var Channels = []string{"latest", "stable"}

// IsChannel reports whether s names a channel.
func IsChannel(s string) bool {
	for _, c := range Channels {
		if s == c {
			return true
		}
	}
	return false
}

// ParseChannel parses the body of a channel file: one version, optionally
// surrounded by white space. Anything else (a captive portal's HTML page, a
// proxy's error text) is an error quoting the start of the body.
func ParseChannel(body []byte) (Version, error) {
	s := strings.TrimSpace(string(body))
	v, err := ParseVersion(s)
	if err != nil {
		return Version{}, fmt.Errorf("not a version: %s", Quote(body, 40))
	}
	return v, nil
}

// Quote returns the first max bytes of b (cut at a rune boundary, "..."
// marking the cut) for a one-line message, through quote.String: printable
// text as it is, anything that could drive a terminal or forge a line
// escaped. Text whose edges a reader could not see (empty, or with leading
// or trailing white space) is quoted too.
func Quote(b []byte, max int) string {
	s, more := string(b), ""
	if len(s) > max {
		for max > 0 && !utf8.RuneStart(s[max]) {
			max--
		}
		s, more = s[:max], "..."
	}
	if s == "" || strings.TrimSpace(s) != s {
		return strconv.Quote(s) + more
	}
	return quote.String(s) + more
}
