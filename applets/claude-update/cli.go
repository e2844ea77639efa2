package claudeupdate

import (
	"strings"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall/kongparse"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/quote"
	"github.com/claude-sandbox/claude-sandbox/internal/release"
)

// flags is the command line. kong never exits the process here: help is a
// flag we handle, and kong's Exit hook only records.
type flags struct {
	Target         string        `arg:"" optional:"" name:"channel|version" help:"latest (default), stable, or a version such as 2.1.197."`
	List           bool          `help:"List the installed versions and which is current." xor:"mode"`
	Rollback       bool          `help:"Switch back to the previous version." xor:"mode"`
	Check          bool          `help:"Say whether an update is available: exit 0 if not (current, held, or a refused downgrade), 100 if so, 1 on error. Changes nothing." xor:"mode"`
	Hold           bool          `help:"Pin the current version (or the version given): channel runs report and skip until --unhold." xor:"mode"`
	Unhold         bool          `help:"Release the hold." xor:"mode"`
	AllowDowngrade bool          `help:"Follow a channel that points below the highest version installed here."`
	Timeout        time.Duration `help:"Give up if the whole update takes longer than this." default:"1h"`
	Source         string        `help:"Where to fetch from: release (signed manifest) or npm (the registry npm is configured with). Default: the source line of SYSCONFDIR/claude-update.conf, else release."`
	Registry       string        `help:"npm registry URL (with --source npm); default: npm's configuration." placeholder:"URL"`
	Force          bool          `help:"Download and verify again even if the version is installed."`
	Keep           int           `help:"How many versions to keep; the current and previous ones always stay." default:"2"`
	AllowUnsigned  bool          `help:"Allow a version given by name that is older than 2.1.89, whose manifest upstream did not sign (the SHA-256 is still checked). Never applies to a channel."`
	Help           bool          `short:"h" help:"Show this help."`
}

const description = `Fetch, verify and install the Claude Code agent binary into the bin
directory (CLAUDE_SBX_BINDIR, default /opt/claude/bin), switch the claude symlink
atomically, and keep the previous version for --rollback.`

func parseFlags(args []string, stdio multicall.Stdio) (*flags, error) {
	var f flags
	if err := kongparse.Parse(&f, &f.Help, "claude-update", description, args, stdio); err != nil {
		return nil, err
	}
	if err := f.validate(); err != nil {
		return nil, err
	}
	return &f, nil
}

func (f *flags) validate() error {
	switch {
	case (f.List || f.Rollback || f.Unhold) && f.Target != "":
		return multicall.Usagef("%s takes no channel or version", f.mode())
	case f.Hold && release.IsChannel(f.Target):
		return multicall.Usagef("--hold takes a version such as 2.1.197 (or none, for the current one), not a channel")
	case f.Source != "" && f.Source != "release" && f.Source != "npm":
		return multicall.Usagef("--source must be release or npm, not %s", quote.String(f.Source))
	case f.Timeout <= 0:
		return multicall.Usagef("--timeout must be positive")
	case f.Keep < 1:
		return multicall.Usagef("--keep must be at least 1")
	case f.AllowUnsigned && (f.Target == "" || release.IsChannel(f.Target)):
		return multicall.Usagef("--allow-unsigned applies to a version given by name (such as 2.1.50), never to a channel")
	}
	if f.Target == "" && !f.Hold {
		f.Target = "latest"
	}
	if f.Target != "" && !release.IsChannel(f.Target) {
		if _, err := release.ParseVersion(f.Target); err != nil {
			return multicall.Usagef("%q is neither a channel (%s) nor a version like 2.1.197", f.Target, strings.Join(release.Channels, ", "))
		}
	}
	return nil
}

// setSource settles the source, the command line's if given, else the
// configuration file's, else release, and checks the flags that depend on it.
func (f *flags) setSource(c conf) error {
	switch {
	case f.Source != "":
	case c.source != "":
		f.Source = c.source
	default:
		f.Source = "release"
	}
	switch {
	case f.Registry != "" && f.Source != "npm":
		return multicall.Usagef("--registry applies to --source npm")
	case f.AllowUnsigned && f.Source != "release":
		return multicall.Usagef("--allow-unsigned applies to --source release")
	}
	return nil
}

func (f *flags) mode() string {
	switch {
	case f.List:
		return "--list"
	case f.Rollback:
		return "--rollback"
	case f.Check:
		return "--check"
	case f.Hold:
		return "--hold"
	case f.Unhold:
		return "--unhold"
	}
	return "update"
}
