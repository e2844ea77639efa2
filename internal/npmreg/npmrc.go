// Package npmreg reads the agent from an npm registry: which registry npm
// is configured with, the packument of a platform package, its sha512
// integrity, and the binary package/claude inside the tarball.
//
// The platform packages are @anthropic-ai/claude-code-linux-x64 (and
// -linux-arm64, -linux-x64-musl, -linux-arm64-musl); each holds the same
// binary as the release channel. The registry comes from --registry or
// npm's configuration, read here (npm is never run), else npm's default.
package npmreg

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/quote"
)

// Scope is the npm scope of the agent packages.
const Scope = "@anthropic-ai"

// MainPackage is the package whose dist-tags say which version is latest;
// its optionalDependencies name the platform packages' versions.
const MainPackage = Scope + "/claude-code"

// Package returns the npm package for a release platform.
func Package(platform string) string { return Scope + "/claude-code-" + platform }

// DefaultRegistry is npm's own default, used when no configuration names
// one (or the only configuration that does is skipped as untrusted).
const DefaultRegistry = "https://registry.npmjs.org/"

// Config is where Registry looks. The zero value of a field means "not
// available".
type Config struct {
	// Getenv reads npm_config_registry, NPM_CONFIG_USERCONFIG,
	// NPM_CONFIG_GLOBALCONFIG, npm_config_prefix, PREFIX and PATH.
	Getenv func(string) string
	// Home is the home directory whose .npmrc is read. Callers running as
	// root pass root's home from the password database, not $HOME: under
	// sudo, $HOME may be the invoking user's, and a process running as
	// that user must not choose what root installs.
	Home string
	// Default is the registry when none is configured; "" is
	// DefaultRegistry.
	Default string
	// Trust, if set, vets every file before it is read (npmrc files,
	// cafile) and the node whose installation gives the global npmrc; a
	// file it refuses is skipped, with one line to Logf saying why. Root
	// sets it to bindir.CheckTrustedFile.
	Trust func(what, path string) error
	// Logf reports what was skipped.
	Logf func(format string, args ...any)
}

func (c Config) logf(format string, args ...any) {
	if c.Logf != nil {
		c.Logf(format, args...)
	}
}

// registryKeys are the keys that name the registry, the scoped one first.
var registryKeys = []string{Scope + ":registry", "registry"}

// Registry returns the registry URL for the agent packages and where it
// came from, in npm's order: the environment, the user npmrc, the global
// npmrc ($PREFIX/etc/npmrc, then /etc/npmrc), then npm's default registry.
// In each place @anthropic-ai:registry wins over registry. The URL must be
// https and ends with a slash. npm itself is never run.
func Registry(c Config) (reg, from string, err error) {
	layers, err := c.layers()
	if err != nil {
		return "", "", err
	}
	return c.registry(layers)
}

func (c Config) registry(layers []layer) (reg, from string, err error) {
	getenv := c.getenv()
	for _, k := range registryKeys {
		for _, name := range []string{"npm_config_" + k, "NPM_CONFIG_" + strings.ToUpper(k)} {
			if v := getenv(name); v != "" {
				return checkURL(v, "environment variable "+name)
			}
		}
	}
	for _, l := range layers {
		if l.env {
			continue
		}
		for _, k := range registryKeys {
			if v := l.values[k]; v != "" {
				return checkURL(v, l.from)
			}
		}
	}
	if c.Default != "" {
		return checkURL(c.Default, "npm's default")
	}
	return DefaultRegistry, "npm's default", nil
}

// CheckURL validates a registry URL given on the command line.
func CheckURL(raw string) (string, error) {
	u, _, err := checkURL(raw, "--registry")
	return u, err
}

func checkURL(raw, from string) (string, string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", "", fmt.Errorf("registry %s from %s is not a plain URL", strconv.Quote(raw), from)
	}
	// The packument carries the tarball's hash, so it must come over an
	// authenticated channel.
	if u.Scheme != "https" {
		return "", "", fmt.Errorf("registry %s from %s is not https; claude-update needs https to trust the integrity hash", quote.String(u.Redacted()), from)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	return u.String(), from, nil
}

// globalPrefix is npm's global prefix: npm_config_prefix, else PREFIX, else
// two levels above the real path of the first node in PATH (/usr/bin/node
// gives /usr). With Trust set, that node must pass it along its whole path:
// a node that leads into a user's tree (nvm) gives no prefix, and only
// /etc/npmrc is the global npmrc.
func (c Config) globalPrefix() string {
	getenv := c.getenv()
	for _, k := range []string{"npm_config_prefix", "NPM_CONFIG_PREFIX", "PREFIX"} {
		if v := getenv(k); v != "" {
			return v
		}
	}
	for _, dir := range filepath.SplitList(getenv("PATH")) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		node := filepath.Join(dir, "node")
		p, err := filepath.EvalSymlinks(node)
		if err != nil {
			continue
		}
		if c.Trust != nil {
			if err := c.Trust("node", node); err != nil {
				c.logf("%v: npm's global prefix is not taken from it", err)
				return ""
			}
		}
		return filepath.Dir(filepath.Dir(p))
	}
	return ""
}

// ParseNpmrc parses npmrc text: key = value lines, ; and # comments,
// optional double quotes around the value, ${VAR} replaced from getenv.
// Later keys override earlier ones, as in npm.
func ParseNpmrc(data []byte, getenv func(string) string) map[string]string {
	m := make(map[string]string)
	for _, e := range parseEntries(data, getenv) {
		m[e.key] = e.value
	}
	return m
}

// expand replaces ${NAME} with getenv(NAME), as npm does in npmrc values.
func expand(s string, getenv func(string) string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		if getenv != nil {
			b.WriteString(getenv(s[i+2 : i+j]))
		}
		s = s[i+j+1:]
	}
}
