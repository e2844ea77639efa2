package release

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Base is the official release base URL.
const Base = "https://downloads.claude.ai/claude-code-releases"

// MaxBinarySize bounds the size a manifest may declare (the binary is about
// 400 MB).
const MaxBinarySize = 4 << 30

// Manifest is {base}/{version}/manifest.json.
type Manifest struct {
	Version   string           `json:"version"`
	BuildDate string           `json:"buildDate"`
	Platforms map[string]Build `json:"platforms"`
}

// Build is one platform's entry in a manifest.
type Build struct {
	Binary   string `json:"binary"`
	Checksum string `json:"checksum"` // SHA-256, lowercase hex
	Size     int64  `json:"size"`
}

// ParseManifest parses and checks a manifest: the version must parse, every
// platform entry must carry a 64-digit hex SHA-256 and a size in
// (0, MaxBinarySize].
func ParseManifest(data []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("not a manifest: %w", err)
	}
	if _, err := ParseVersion(m.Version); err != nil {
		return nil, err
	}
	if len(m.Platforms) == 0 {
		return nil, fmt.Errorf("no platforms")
	}
	for p, b := range m.Platforms {
		sum, err := hex.DecodeString(b.Checksum)
		if err != nil || len(sum) != 32 {
			return nil, fmt.Errorf("platform %s: checksum %s is not a sha256", Quote([]byte(p), 40), Quote([]byte(b.Checksum), 70))
		}
		if b.Size <= 0 || b.Size > MaxBinarySize {
			return nil, fmt.Errorf("platform %s: size %d out of range", Quote([]byte(p), 40), b.Size)
		}
		b.Checksum = strings.ToLower(b.Checksum)
		m.Platforms[p] = b
	}
	return &m, nil
}

// Build returns the entry for platform, or an error listing the platforms
// the version ships.
func (m *Manifest) Build(platform string) (Build, error) {
	b, ok := m.Platforms[platform]
	if !ok {
		return Build{}, fmt.Errorf("%s has no build for %s; %s ships: %s", m.Version, platform, m.Version, strings.Join(safeNames(m.PlatformNames()), ", "))
	}
	// The download path is fixed as {platform}/claude; a manifest naming
	// another file for a Linux platform is not one we understand.
	if b.Binary != "claude" {
		return Build{}, fmt.Errorf("the %s entry names binary %s, want \"claude\"", platform, Quote([]byte(b.Binary), 40))
	}
	return b, nil
}

// PlatformNames returns the platforms of m, sorted.
func (m *Manifest) PlatformNames() []string {
	names := make([]string, 0, len(m.Platforms))
	for p := range m.Platforms {
		names = append(names, p)
	}
	sort.Strings(names)
	return names
}

// safeNames quotes names that are not plain [a-z0-9-], so that a hostile
// manifest cannot put a newline into a message.
func safeNames(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n
		for _, c := range n {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				out[i] = Quote([]byte(n), 40)
				break
			}
		}
	}
	return out
}
