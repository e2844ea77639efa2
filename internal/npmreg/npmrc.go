// Package npmreg reads the agent from an npm registry: which registry npm
// is configured with, the packument of a platform package, its sha512
// integrity, and the binary package/claude inside the tarball.
//
// The platform packages are @anthropic-ai/claude-code-linux-x64 (and
// -linux-arm64, -linux-x64-musl, -linux-arm64-musl); each holds the same
// binary as the release channel. No registry host is named here: the URL
// always comes from the user's npm configuration or --registry.
package npmreg

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Scope is the npm scope of the agent packages.
const Scope = "@anthropic-ai"

// MainPackage is the package whose dist-tags say which version is latest;
// its optionalDependencies name the platform packages' versions.
const MainPackage = Scope + "/claude-code"

// Package returns the npm package for a release platform.
func Package(platform string) string { return Scope + "/claude-code-" + platform }

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
	// Npm runs `npm config get KEY` as the last resort; nil skips it.
	Npm func(ctx context.Context, key string) (string, error)
}

// Registry returns the registry URL for the agent packages and where it
// came from, in npm's order: the environment, the user npmrc, the global
// npmrc ($PREFIX/etc/npmrc, then /etc/npmrc), then what `npm config get`
// prints. In each place @anthropic-ai:registry wins over registry. The URL
// must be https and ends with a slash.
func Registry(ctx context.Context, c Config) (reg, from string, err error) {
	getenv := c.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	keys := []string{Scope + ":registry", "registry"}
	for _, k := range keys {
		for _, name := range []string{"npm_config_" + k, "NPM_CONFIG_" + strings.ToUpper(k)} {
			if v := getenv(name); v != "" {
				return checkURL(v, "environment variable "+name)
			}
		}
	}
	files := c.files()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return "", "", fmt.Errorf("read npm config: %w", err)
		}
		rc := ParseNpmrc(data, getenv)
		for _, k := range keys {
			if v := rc[k]; v != "" {
				return checkURL(v, f)
			}
		}
	}
	if c.Npm != nil {
		for _, k := range keys {
			v, err := c.Npm(ctx, k)
			if err != nil {
				return "", "", fmt.Errorf("no npm registry configured (npm config get %s: %v): set npm_config_registry or pass --registry", k, err)
			}
			if v != "" && v != "undefined" {
				return checkURL(v, "npm config get "+k)
			}
		}
	}
	return "", "", fmt.Errorf("no npm registry configured: set npm_config_registry, add registry=URL to ~/.npmrc, or pass --registry")
}

// CheckURL validates a registry URL given on the command line.
func CheckURL(raw string) (string, error) {
	u, _, err := checkURL(raw, "--registry")
	return u, err
}

func checkURL(raw, from string) (string, string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", "", fmt.Errorf("registry %q from %s is not a plain URL", raw, from)
	}
	// The packument carries the tarball's hash, so it must come over an
	// authenticated channel.
	if u.Scheme != "https" {
		return "", "", fmt.Errorf("registry %s from %s is not https; claude-update needs https to trust the integrity hash", u.Redacted(), from)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	return u.String(), from, nil
}

// globalPrefix is npm's global prefix: npm_config_prefix, else PREFIX, else
// two levels above the real path of node in PATH (/usr/bin/node gives /usr).
func globalPrefix(getenv func(string) string) string {
	for _, k := range []string{"npm_config_prefix", "NPM_CONFIG_PREFIX", "PREFIX"} {
		if v := getenv(k); v != "" {
			return v
		}
	}
	for _, dir := range filepath.SplitList(getenv("PATH")) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p, err := filepath.EvalSymlinks(filepath.Join(dir, "node"))
		if err != nil {
			continue
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

// NpmConfigGet runs `npm config get key` with home as HOME and returns its
// output, trimmed.
func NpmConfigGet(home string, environ []string) func(ctx context.Context, key string) (string, error) {
	return func(ctx context.Context, key string) (string, error) {
		npm, err := exec.LookPath("npm")
		if err != nil {
			return "", err
		}
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, "config", "get", key)
		cmd.Env = append(environ, "HOME="+home)
		cmd.Dir = "/" // no project .npmrc from the caller's directory
		out, err := cmd.Output()
		if err != nil {
			return "", err
		}
		return strings.TrimSpace(string(out)), nil
	}
}
