package npmreg

import (
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/quote"
	"github.com/claude-sandbox/claude-sandbox/internal/release"
)

// Packument is the registry document of one package: its dist-tags and,
// per version, where the tarball is and its integrity.
type Packument struct {
	Name     string                      `json:"name"`
	DistTags map[string]string           `json:"dist-tags"`
	Versions map[string]PackumentVersion `json:"versions"`
}

// PackumentVersion is one entry of Packument.Versions.
type PackumentVersion struct {
	Version              string            `json:"version"`
	Dist                 Dist              `json:"dist"`
	OptionalDependencies map[string]string `json:"optionalDependencies"`
}

// Dist says where a version's tarball is and what it hashes to.
type Dist struct {
	Integrity    string `json:"integrity"`
	Tarball      string `json:"tarball"`
	UnpackedSize int64  `json:"unpackedSize"`
}

// ParsePackument parses a packument and checks that it is for package name.
func ParsePackument(data []byte, name string) (*Packument, error) {
	var p Packument
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("packument of %s: %w", name, err)
	}
	if p.Name != name {
		return nil, fmt.Errorf("packument of %s names package %s", name, release.Quote([]byte(p.Name), 60))
	}
	return &p, nil
}

// Tag returns the version a dist-tag points to.
func (p *Packument) Tag(tag string) (release.Version, error) {
	s, ok := p.DistTags[tag]
	if !ok {
		var tags []string
		for t := range p.DistTags {
			tags = append(tags, tagName(t))
		}
		sort.Strings(tags)
		if tag == "stable" {
			return release.Version{}, fmt.Errorf("npm has no stable channel: %s has no dist-tag \"stable\" (it has: %s); use latest, a version, or --source release for stable", p.Name, quoteAll(tags))
		}
		return release.Version{}, fmt.Errorf("%s has no dist-tag %q (it has: %s)", p.Name, tag, quoteAll(tags))
	}
	v, err := release.ParseVersion(s)
	if err != nil {
		return release.Version{}, fmt.Errorf("%s: dist-tag %s: %w", p.Name, tag, err)
	}
	return v, nil
}

// PlatformVersion returns the version of the platform package pkg that
// version v of this (the main) package depends on through its
// optionalDependencies. It must be an exact version: that is what npm
// installs with v.
func (p *Packument) PlatformVersion(v release.Version, pkg string) (release.Version, error) {
	pv, ok := p.Versions[v.String()]
	if !ok {
		return release.Version{}, fmt.Errorf("%s has no version %s", p.Name, v)
	}
	dep, ok := pv.OptionalDependencies[pkg]
	if !ok {
		return release.Version{}, fmt.Errorf("%s@%s does not list %s in its optionalDependencies (no build for this platform?)", p.Name, v, pkg)
	}
	w, err := release.ParseVersion(dep)
	if err != nil {
		return release.Version{}, fmt.Errorf("%s@%s depends on %s@%s, not one exact version", p.Name, v, pkg, release.Quote([]byte(dep), 40))
	}
	return w, nil
}

// Artifact is a version's tarball and its sha512 digests.
type Artifact struct {
	Tarball string
	SHA512  [][]byte
	// UnpackedSize is dist.unpackedSize, 0 if the packument has none.
	UnpackedSize int64
}

// Artifact returns the tarball URL (https) and the sha512 digests of
// version v.
func (p *Packument) Artifact(v release.Version) (Artifact, error) {
	pv, ok := p.Versions[v.String()]
	if !ok {
		return Artifact{}, fmt.Errorf("%s has no version %s", p.Name, v)
	}
	if pv.Version != "" && pv.Version != v.String() {
		return Artifact{}, fmt.Errorf("%s: entry %s says version %s", p.Name, v, release.Quote([]byte(pv.Version), 60))
	}
	sums, err := ParseIntegrity(pv.Dist.Integrity)
	if err != nil {
		return Artifact{}, fmt.Errorf("%s@%s: %w", p.Name, v, err)
	}
	u, err := url.Parse(pv.Dist.Tarball)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return Artifact{}, fmt.Errorf("%s@%s: tarball URL %s is not https", p.Name, v, release.Quote([]byte(pv.Dist.Tarball), 100))
	}
	size := pv.Dist.UnpackedSize
	if size < 0 {
		size = 0
	}
	return Artifact{Tarball: u.String(), SHA512: sums, UnpackedSize: size}, nil
}

// ParseIntegrity returns the sha512 digests of a Subresource Integrity
// string ("sha512-BASE64 ..."; options after ? are ignored). Other
// algorithms are skipped; no sha512 at all is an error, so that a registry
// offering only sha1 cannot downgrade the check.
func ParseIntegrity(sri string) ([][]byte, error) {
	var sums [][]byte
	for _, tok := range strings.Fields(sri) {
		alg, val, ok := strings.Cut(tok, "-")
		if !ok || alg != "sha512" {
			continue
		}
		val, _, _ = strings.Cut(val, "?")
		sum, err := base64.StdEncoding.DecodeString(val)
		if err != nil || len(sum) != sha512.Size {
			return nil, fmt.Errorf("integrity %s is not a sha512 digest", release.Quote([]byte(tok), 100))
		}
		sums = append(sums, sum)
	}
	if len(sums) == 0 {
		return nil, fmt.Errorf("no sha512 integrity (got %s)", release.Quote([]byte(sri), 100))
	}
	return sums, nil
}

// URL returns the packument URL of package name at registry (which ends
// with a slash): the scope's slash is escaped, as npm does.
func URL(registry, name string) string {
	return registry + strings.Replace(name, "/", "%2f", 1)
}

// tagName returns a dist-tag for a message, quoted unless plain.
func tagName(t string) string {
	if len(t) > 30 {
		return release.Quote([]byte(t), 30)
	}
	for _, c := range t {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			return release.Quote([]byte(t), 30)
		}
	}
	return t
}

// quoteAll joins names from the registry, each quoted if it needs to be.
func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quote.String(n)
	}
	return strings.Join(q, ", ")
}
