package sandbox

import (
	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
	"github.com/claude-sandbox/claude-sandbox/internal/nsname"
)

// homeAndScratch mounts the kernel file systems and scratch space, binds
// the sandbox home at the home, makes the runtime directory and, in a
// namespace, binds its resolv.conf; the sandbox starts in the home.
func (l *Launch) homeAndScratch(h Host, s Spec, net chainFacts) {
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
}
