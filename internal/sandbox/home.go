package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/agentprofile"
	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
	"github.com/claude-sandbox/claude-sandbox/internal/nsname"
	qname "github.com/claude-sandbox/claude-sandbox/internal/quote"
	"github.com/claude-sandbox/claude-sandbox/internal/sandboxcfg"
)

// homeAndScratch mounts the kernel file systems and scratch space, binds
// the sandbox home (chooseHome) at the home, with the login and common
// settings of a per-project home, makes the runtime directory and, in a
// namespace, binds its resolv.conf; the sandbox starts in the home.
func (l *Launch) homeAndScratch(h Host, s Spec, net chainFacts) error {
	p := &l.Plan
	netnsActive, netns := net.netnsActive, net.netns

	// Kernel file systems and scratch space.
	p.Ops = append(p.Ops,
		bwrap.Op{Kind: bwrap.Proc, Dest: "/proc"},
		bwrap.Op{Kind: bwrap.Dev, Dest: "/dev"},
		bwrap.Op{Kind: bwrap.Tmpfs, Dest: "/dev/shm"},
		bwrap.Op{Kind: bwrap.Mqueue, Dest: "/dev/mqueue"},
		bwrap.Op{Kind: bwrap.Tmpfs, Dest: "/var/tmp"},
		bwrap.Op{Kind: bwrap.Tmpfs, Dest: "/run/lock"},
		bwrap.Op{Kind: bwrap.Symlink, Src: "../run", Dest: "/var/run"},
		bwrap.Op{Kind: bwrap.Symlink, Src: "../run/lock", Dest: "/var/lock"},
	)
	l.roBind(h, "/run/systemd/resolve")

	// Home and the runtime directory.
	inRuntime := InsideRuntimeDir(s.UID)
	p.Ops = append(p.Ops,
		bwrap.Op{Kind: bwrap.Bind, Src: s.SandboxHome, Dest: s.Home},
		bwrap.Op{Kind: bwrap.Dir, Dest: inRuntime, Perms: 0o700},
	)
	if l.Homes != "" {
		if err := l.sharedLogin(h, s); err != nil {
			return err
		}
	}
	if netnsActive {
		rc := nsname.ResolvConf(netns)
		if _, err := h.Stat(rc); err == nil {
			p.Ops = append(p.Ops, bwrap.Op{Kind: bwrap.ROBind, Src: rc, Dest: "/etc/resolv.conf"})
		} else {
			l.Skipped = append(l.Skipped, rc)
		}
	}
	p.Ops = append(p.Ops, bwrap.Op{Kind: bwrap.Setenv, Src: "XDG_RUNTIME_DIR", Dest: inRuntime})
	p.Chdir = s.Home
	return nil
}

// The directory of the per-project homes (Spec.Homes) holds, besides one
// home per project, what every project shares.
const (
	// CredentialsName is the agent's login, shared by every per-project
	// home: bound read-write at ~/.claude/.credentials.json, where Claude
	// Code keeps it on Linux.
	CredentialsName = "credentials.json"
	// CommonName holds the settings the user wants in every project,
	// bound read-only into ~/.claude (CommonEntries).
	CommonName = "common"
	// ProfileName is the agent's setup kept across per-project homes
	// (internal/agentprofile), bound nowhere: a new home's ~/.claude.json
	// is made from it, and a session's end updates it.
	ProfileName = "profile.json"
)

// CommonEntries are the entries of CommonName bound read-only into
// ~/.claude of every per-project home, where they exist: the agent's
// settings (hooks included), its memory, commands and subagents.
var CommonEntries = []string{"settings.json", "CLAUDE.md", "commands", "agents"}

// IDHost is a Host that tells the device and inode of a directory, which
// key a project's home along with its path.
type IDHost interface {
	DirID(path string) (dev, ino uint64, err error)
}

// HomesName is the directory below the real home that holds a sandbox
// home per project, the shared login, the common settings and the shared
// caches (Spec.Homes).
const HomesName = ".claude-homes"

// ProjectHomeName returns the name of the home of the project at dir
// with device dev and inode ino: the directory's base name, reduced to
// letters, digits, '.', '_' and '-', and a hash of all three, so that a
// project removed and made again at the same path gets a new home.
func ProjectHomeName(dir string, dev, ino uint64) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%d", dir, dev, ino)))
	base := []byte(filepath.Base(dir))
	for i, c := range base {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			base[i] = '_'
		}
	}
	if len(base) > 32 {
		base = base[:32]
	}
	if len(base) == 0 || base[0] == '.' {
		base = append([]byte{'_'}, base...)
	}
	return string(base) + "-" + hex.EncodeToString(sum[:8])
}

// chooseHome decides the sandbox home and returns the spec with
// SandboxHome set to it. By default each project has a home of its own in
// s.Homes, keyed by the project directory (the working directory's, bound
// or not; else the working directory), so that nothing one project's
// agent leaves in its home (~/.profile, ~/.bashrc, ~/.claude/settings.json
// hooks) runs in another's. With `home shared` (the last home directive
// whose conditions hold), or without s.Homes, every project shares
// s.SandboxHome, as before per-project homes.
func (l *Launch) chooseHome(h Host, s Spec) (Spec, error) {
	s.sharedHome = s.SandboxHome
	l.SandboxHome = s.SandboxHome
	if s.Homes == "" {
		return s, nil
	}
	args, from, err := l.setting(h, s, sandboxcfg.Home, []string{sandboxcfg.HomeProject})
	if err != nil {
		return s, err
	}
	if args[0] == sandboxcfg.HomeShared {
		l.Notes = append(l.Notes, fmt.Sprintf("home: %s, shared by every project (home shared, %s)", qname.String(s.SandboxHome), from))
		return s, nil
	}
	key, name := projectName(h, s)
	s.SandboxHome = filepath.Join(s.Homes, name)
	l.SandboxHome, l.Homes = s.SandboxHome, s.Homes
	l.Notes = append(l.Notes, fmt.Sprintf("home: %s, the home of %s alone (%s)", qname.String(s.SandboxHome), qname.String(key), from),
		fmt.Sprintf("home: a new home's ~/.claude.json holds only these keys of %s: %s", qname.String(filepath.Join(s.Homes, ProfileName)), strings.Join(agentprofile.Names(), ", ")))
	return s, nil
}

// projectName returns the directory that keys this start's per-project
// state (the project's directory, else the working directory, else the
// home) and the name of that state's directory (ProjectHomeName).
func projectName(h Host, s Spec) (key, name string) {
	key, _, _ = projectCandidate(h, s)
	if key == "" {
		key = s.Pwd
	}
	if key == "" {
		key = s.Home
	}
	var dev, ino uint64
	if ih, ok := h.(IDHost); ok {
		dev, ino, _ = ih.DirID(key)
	}
	return key, ProjectHomeName(key, dev, ino)
}

// chooseTmp makes the private /tmp the project's own: the directory below
// CLAUDE_SBX_TMP named as its home is, so that what one project's agent
// leaves in /tmp never reaches another project's (with `home shared` too:
// the home is then what they share, and says so). systemMounts bound the
// directory given; its bind becomes the project's.
func (l *Launch) chooseTmp(h Host, s Spec) Spec {
	if s.Tmp == "" {
		return s
	}
	key, name := projectName(h, s)
	s.tmpRoot, s.Tmp = s.Tmp, filepath.Join(s.Tmp, name)
	for i, o := range l.Plan.Ops {
		if o.Kind == bwrap.Bind && o.Dest == "/tmp" && o.Src == s.tmpRoot {
			l.Plan.Ops[i].Src = s.Tmp
		}
	}
	l.Tmp, l.TmpRoot = s.Tmp, s.tmpRoot
	l.Notes = append(l.Notes, fmt.Sprintf("tmp: %s, the /tmp of %s alone (CLAUDE_SBX_TMP)", qname.String(s.Tmp), qname.String(key)))
	return s
}

// sharedLogin binds what every per-project home shares: the login,
// read-write, and the common settings that exist, read-only. bwrap makes
// their mount points in the sandbox home by name: none may pass through a
// symlink there.
func (l *Launch) sharedLogin(h Host, s Spec) error {
	claude := filepath.Join(s.Home, ".claude")
	ops := []bwrap.Op{{Kind: bwrap.Bind, Src: filepath.Join(s.Homes, CredentialsName), Dest: filepath.Join(claude, ".credentials.json")}}
	for _, e := range CommonEntries {
		src := filepath.Join(s.Homes, CommonName, e)
		if _, err := h.Lstat(src); err != nil {
			l.Skipped = append(l.Skipped, src)
			continue
		}
		ops = append(ops, bwrap.Op{Kind: bwrap.ROBindTry, Src: src, Dest: filepath.Join(claude, e)})
	}
	for _, o := range ops {
		if err := noSymlinkBelow(h, s.Home, s.SandboxHome, o.Dest); err != nil {
			return fmt.Errorf("sandbox home: %w", err)
		}
	}
	l.Plan.Ops = append(l.Plan.Ops, ops...)
	return nil
}
