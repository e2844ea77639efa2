// Package buildinfo holds values baked in at build time with
// -ldflags "-X github.com/claude-sandbox/claude-sandbox/internal/buildinfo.Name=value".
//
// It imports nothing: the setuid netns-enter binary reads it.
package buildinfo

// Set by the Makefile; the defaults match PREFIX=/usr/local.
var (
	// Version is the version of this build.
	Version = "dev"
	// Prefix is the installation prefix (PREFIX in the Makefile).
	Prefix = "/usr/local"
	// Sysconfdir holds root-owned configuration such as the netns-enter
	// whitelist (normally $(PREFIX)/etc).
	Sysconfdir = "/usr/local/etc"
	// BinDir is where the agent binary is installed (CLAUDE_SBX_BINDIR).
	BinDir = "/opt/claude/bin"
	// HomeName is the sandbox home below the real home (CLAUDE_SBX_HOME).
	HomeName = ".claude-home"
	// Netns is the network namespace the launcher enters (CLAUDE_SBX_NETNS).
	Netns = "agents"
)
