package claude

import (
	"context"
	"os"
	"path/filepath"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
	"github.com/claude-sandbox/claude-sandbox/internal/sandbox"
)

// preflight checks that bwrap runs and that AppArmor lets it, and makes
// the agent's own repository if the plan has one.
func preflight(ctx context.Context, l *sandbox.Launch, bwrapPath string, in inputs) error {
	home, uid := in.home, in.uid
	if err := bwrap.Check(bwrapPath, cacheDir(home)); err != nil {
		return err
	}
	if err := bwrap.CheckAppArmor(ctx, bwrapPath, l.Plan, readFile); err != nil {
		return err
	}
	if len(l.NetnsEnter) > 1 {
		if err := checkResolver(l.NetnsEnter[1]); err != nil {
			return err
		}
	}
	// The agent's own repository (git commit) is a bind source: it must
	// exist before the binds are opened.
	if l.AgentGit != "" {
		if err := checkHostGit(); err != nil {
			return err
		}
		if err := ensureAgentGit(l.AgentGit, uid); err != nil {
			return err
		}
		// Its socket's directory is a bind source too (push_linux.go).
		if err := preparePush(l, uid); err != nil {
			return err
		}
	}
	return nil
}

func cacheDir(home string) string {
	if d := os.Getenv("XDG_CACHE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "claude-sandbox")
	}
	return filepath.Join(home, ".cache", "claude-sandbox")
}
