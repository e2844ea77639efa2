package claude

import (
	"path/filepath"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/buildinfo"
	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/nsname"
)

// knobs are the build-time defaults as overridden by the environment.
type knobs struct {
	binDir      string // CLAUDE_SBX_BINDIR
	sandboxHome string // CLAUDE_SBX_HOME
	tmp         string // CLAUDE_SBX_TMP; "": /tmp is a tmpfs
	netns       string // CLAUDE_SBX_NETNS
}

// readKnobs reads the knobs; a bad value is a usage error naming the
// variable.
func readKnobs(getenv func(string) string, home string, uid int) (knobs, error) {
	k := knobs{
		binDir:      buildinfo.BinDir,
		sandboxHome: buildinfo.HomeName,
		netns:       buildinfo.Netns,
	}
	for _, v := range []struct {
		name string
		dst  *string
	}{
		{"CLAUDE_SBX_BINDIR", &k.binDir},
		{"CLAUDE_SBX_HOME", &k.sandboxHome},
		{"CLAUDE_SBX_TMP", &k.tmp},
		{"CLAUDE_SBX_NETNS", &k.netns},
	} {
		if s := getenv(v.name); s != "" {
			*v.dst = s
		}
	}
	bad := func(name, val, why string) error {
		return multicall.Usagef("%s=%q: %s", name, val, why)
	}
	for _, v := range []struct{ name, val string }{
		{"CLAUDE_SBX_BINDIR", k.binDir}, {"CLAUDE_SBX_HOME", k.sandboxHome}, {"CLAUDE_SBX_TMP", k.tmp},
	} {
		if strings.ContainsAny(v.val, "\x00\n\r") {
			return k, bad(v.name, v.val, "contains a control character")
		}
	}
	if !filepath.IsAbs(k.binDir) {
		return k, bad("CLAUDE_SBX_BINDIR", k.binDir, "not an absolute path")
	}
	k.binDir = filepath.Clean(k.binDir)
	if k.tmp != "" {
		if !filepath.IsAbs(k.tmp) {
			return k, bad("CLAUDE_SBX_TMP", k.tmp, "not an absolute path")
		}
		k.tmp = filepath.Clean(k.tmp)
		if k.tmp == "/tmp" || k.tmp == "/" {
			return k, bad("CLAUDE_SBX_TMP", k.tmp, "the sandbox's /tmp must be a directory of its own")
		}
	}
	h := k.sandboxHome
	if !filepath.IsAbs(h) {
		rel := filepath.Clean(h)
		if rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
			return k, bad("CLAUDE_SBX_HOME", h, "want an absolute path or a directory below your home")
		}
		h = filepath.Join(home, rel)
	}
	h = filepath.Clean(h)
	if h == home || h == "/" || strings.HasPrefix(home, h+"/") {
		return k, bad("CLAUDE_SBX_HOME", k.sandboxHome, "would expose your real home: want a directory of its own")
	}
	k.sandboxHome = h
	// The same for the private tmp and the agent's directory (bound read
	// write at /tmp, and read-only): by name here, on the fd at launch.
	for _, v := range []struct{ name, val string }{{"CLAUDE_SBX_TMP", k.tmp}, {"CLAUDE_SBX_BINDIR", k.binDir}} {
		if v.val == "" {
			continue
		}
		if v.val == home || v.val == "/" || strings.HasPrefix(home, v.val+"/") {
			return k, bad(v.name, v.val, "would expose your real home: want a directory of its own")
		}
	}
	if err := nsname.Check(k.netns); err != nil {
		return k, multicall.Usagef("CLAUDE_SBX_NETNS: %w", err)
	}
	return k, nil
}
