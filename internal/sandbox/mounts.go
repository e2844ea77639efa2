package sandbox

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
)

// Paths the default plan binds read-only where they exist.
var (
	usrDirs  = []string{"/usr/bin", "/usr/lib", "/usr/lib64", "/usr/libexec", "/usr/share", "/usr/include", "/usr/sbin", "/usr/src"}
	rootDirs = []string{"/bin", "/sbin", "/lib", "/lib64"}
	etcPaths = []string{"/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/resolv.conf", "/etc/gai.conf", "/etc/host.conf", "/etc/hosts", "/etc/ld.so.*", "/etc/localtime", "/etc/os-release", "/etc/machine-id", "/etc/ca-certificates", "/etc/pki", "/etc/ssl", "/etc/alternatives"}
)

// SystemSources are the bind sources of every plan that are known before
// it is made (the system directories and files, not the patterns), for a
// launcher that opens them while it plans.
func SystemSources() []string {
	out := append([]string{}, usrDirs...)
	for _, e := range etcPaths {
		if !strings.ContainsAny(e, "*?[") {
			out = append(out, e)
		}
	}
	return out
}

// systemMounts binds the system directories read-only, then /tmp and the agent's directory; it returns the agent's path.
func (l *Launch) systemMounts(h Host, s Spec) (string, error) {
	p := &l.Plan
	// System directories, read-only.
	for _, d := range usrDirs {
		l.roBind(h, d)
	}
	for _, d := range rootDirs {
		fi, err := h.Lstat(d)
		switch {
		case err != nil:
			l.Skipped = append(l.Skipped, d)
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := h.Readlink(d)
			if err != nil {
				l.Skipped = append(l.Skipped, d)
				continue
			}
			p.Ops = append(p.Ops, bwrap.Op{Kind: bwrap.Symlink, Src: target, Dest: d})
		default:
			p.Ops = append(p.Ops, bwrap.Op{Kind: bwrap.ROBindTry, Src: d, Dest: d})
		}
	}
	for _, e := range etcPaths {
		if strings.ContainsAny(e, "*?[") {
			m, _ := h.Glob(e)
			if len(m) == 0 {
				l.Skipped = append(l.Skipped, e)
			}
			for _, f := range m {
				l.roBind(h, f)
			}
			continue
		}
		l.roBind(h, e)
	}

	// /tmp comes before the binds of the agent and the home, which may
	// lie below /tmp and must not be hidden by it: a tmpfs, whose size
	// the budget sets (budgets.go), or the directory CLAUDE_SBX_TMP names.
	if s.Tmp != "" {
		p.Ops = append(p.Ops, bwrap.Op{Kind: bwrap.Bind, Src: s.Tmp, Dest: "/tmp"})
	} else {
		p.Ops = append(p.Ops, bwrap.Op{Kind: bwrap.Tmpfs, Dest: "/tmp"})
	}

	// The agent.
	agent := filepath.Join(s.BinDir, "claude")
	if _, err := h.Stat(s.BinDir); err == nil {
		p.Ops = append(p.Ops, bwrap.Op{Kind: bwrap.ROBind, Src: s.BinDir, Dest: s.BinDir})
	} else if !s.Shell {
		return "", fmt.Errorf("%s not found: run claude-update", agent)
	} else {
		l.Skipped = append(l.Skipped, s.BinDir)
	}
	return agent, nil
}

// roBind binds path read-only if it exists, else records it as skipped.
func (l *Launch) roBind(h Host, path string) {
	if _, err := h.Stat(path); err != nil {
		l.Skipped = append(l.Skipped, path)
		return
	}
	l.Plan.Ops = append(l.Plan.Ops, bwrap.Op{Kind: bwrap.ROBindTry, Src: path, Dest: path})
}
