package claude

import (
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/hostpath"
	"github.com/claude-sandbox/claude-sandbox/internal/quote"
	"github.com/claude-sandbox/claude-sandbox/internal/sandbox"
)

// The launcher's own bind sources are created in their parent as opened,
// then checked on the fd the bind is made from (see bindFromFDs and
// dirRules): what is checked is what the sandbox gets.

// checkSandboxHome checks that the sandbox home is a directory (not a
// symlink) of the user's that nobody else can use.
func checkSandboxHome(path string, uid int) func(r *hostpath.Resolved) error {
	return func(r *hostpath.Resolved) error {
		st := &r.Stat
		switch {
		case r.IsSymlink():
			return fmt.Errorf("sandbox home %s is a symlink (to %q), not a directory: remove it or set CLAUDE_SBX_HOME to use another", quote.String(path), linkTarget(r))
		case !r.IsDir():
			return fmt.Errorf("sandbox home %s: not a directory (set CLAUDE_SBX_HOME to use another)", quote.String(path))
		case int(st.Uid) != uid:
			return fmt.Errorf("sandbox home %s: owned by uid %d, not by you (uid %d)", quote.String(path), st.Uid, uid)
		case st.Mode&0o077 != 0:
			// The agent can chmod its home; others must not read its
			// state (API keys in .claude.json) or plant files there.
			return fmt.Errorf("sandbox home %s has mode %04o, want 0700: chmod 700 %s", quote.String(path), st.Mode&0o7777, quote.String(path))
		}
		return nil
	}
}

// The private tmp CLAUDE_SBX_TMP names: another user can pre-create it, or
// a symlink there, to read or feed what the agent keeps in /tmp: refuse
// rather than use it. Its directory must be one where nobody else can rename
// or replace it (not writable by others, or sticky like /tmp).

func checkTmpParent(path, parent string, st *unix.Stat_t, uid int) error {
	if o := int(st.Uid); o != 0 && o != uid {
		return fmt.Errorf("private tmp %s: its directory %s is owned by uid %d: set CLAUDE_SBX_TMP to a directory of your own", quote.String(path), quote.String(parent), o)
	}
	if st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0 {
		return fmt.Errorf("private tmp %s: its directory %s is writable by others and not sticky: set CLAUDE_SBX_TMP to a directory of your own", quote.String(path), quote.String(parent))
	}
	return nil
}

func checkPrivateTmp(path string, uid int) func(r *hostpath.Resolved) error {
	const fix = "remove it or set CLAUDE_SBX_TMP to a directory of your own"
	return func(r *hostpath.Resolved) error {
		var pst unix.Stat_t
		if err := unix.Fstat(int(r.Parent().Fd()), &pst); err != nil {
			return fmt.Errorf("private tmp %s: %w", quote.String(path), err)
		}
		if err := checkTmpParent(path, filepath.Dir(r.Path), &pst, uid); err != nil {
			return err
		}
		st := &r.Stat
		switch {
		case r.IsSymlink():
			return fmt.Errorf("private tmp %s is a symlink (to %q), not a directory: someone may have planted it: %s", quote.String(path), linkTarget(r), fix)
		case !r.IsDir():
			return fmt.Errorf("private tmp %s is not a directory: %s", quote.String(path), fix)
		case int(st.Uid) != uid:
			return fmt.Errorf("private tmp %s is owned by uid %d, not by you (uid %d): another user may have created it: %s", quote.String(path), st.Uid, uid, fix)
		case st.Mode&0o7777 != 0o700:
			return fmt.Errorf("private tmp %s has mode %04o, want 0700: run chmod 0700 %s", quote.String(path), st.Mode&0o7777, quote.String(path))
		}
		return nil
	}
}

// checkBinDir checks that the agent's directory is a directory of the
// user's or root's that nobody else can write: the agent started from it
// runs with the user's rights.
func checkBinDir(path string, uid int) func(r *hostpath.Resolved) error {
	return func(r *hostpath.Resolved) error {
		st := &r.Stat
		switch {
		case !r.IsDir():
			return fmt.Errorf("agent directory %s is not a directory: set CLAUDE_SBX_BINDIR to the directory claude-update installs to", quote.String(path))
		case int(st.Uid) != uid && st.Uid != 0:
			return fmt.Errorf("agent directory %s is owned by uid %d, not by you or root: set CLAUDE_SBX_BINDIR to a directory of your own", quote.String(path), st.Uid)
		case st.Mode&0o022 != 0:
			return fmt.Errorf("agent directory %s is writable by group or others (mode %04o): run chmod go-w %s", quote.String(path), st.Mode&0o7777, quote.String(path))
		}
		return nil
	}
}

// dirRules are the checks of the launcher's own bind sources.
func dirRules(k knobs, uid int) map[string]srcRule {
	rules := map[string]srcRule{
		k.sandboxHome: {noFollow: true, exposeHome: true, check: checkSandboxHome(k.sandboxHome, uid),
			create: true, name: "sandbox home"},
		k.binDir: {exposeHome: true, check: checkBinDir(k.binDir, uid)},
	}
	return rules
}

// tmpRule is the check of a private tmp directory: the one CLAUDE_SBX_TMP
// names and each project's in it, whose directory must be one nobody
// else can rename or replace.
func tmpRule(path string, uid int) srcRule {
	return srcRule{noFollow: true, exposeHome: true, check: checkPrivateTmp(path, uid),
		create: true, name: "private tmp", checkParent: func(p *hostpath.Resolved) error {
			return checkTmpParent(path, p.Path, &p.Stat, uid)
		}}
}

// tmpRules adds the check of the project's directory in the one
// CLAUDE_SBX_TMP names, which is bound at /tmp (sandbox.Launch.Tmp), to
// rules: bindFromFDs checks or makes CLAUDE_SBX_TMP's directory first,
// then the project's in it, each through the fd of its parent and never
// through a symlink the sandbox can write.
func tmpRules(rules map[string]srcRule, l *sandbox.Launch, uid int) {
	if l.Tmp == "" {
		return
	}
	root := tmpRule(l.TmpRoot, uid)
	rule := tmpRule(l.Tmp, uid)
	rule.parent = &root
	rules[l.Tmp] = rule
}

func linkTarget(r *hostpath.Resolved) string {
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(int(r.File.Fd()), "", buf)
	if err != nil {
		return "?"
	}
	return string(buf[:n])
}
