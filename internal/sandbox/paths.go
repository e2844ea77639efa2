package sandbox

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
)

// Visible reports whether path exists inside the sandbox as planned so far,
// judged from the ops (the last one covering path decides) and the host.
func (l *Launch) Visible(h Host, path string) bool {
	return l.visible(h, filepath.Clean(path), 0)
}

func (l *Launch) visible(h Host, path string, depth int) bool {
	if depth > 8 {
		return false
	}
	i, rel := l.covering(path, len(l.Plan.Ops))
	if i < 0 {
		return false
	}
	switch o := l.Plan.Ops[i]; {
	case o.IsBind():
		_, err := h.Stat(filepath.Join(o.Src, rel))
		return err == nil
	case o.Kind == bwrap.Symlink:
		target := o.Src
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(o.Dest), target)
		}
		return l.visible(h, filepath.Join(target, rel), depth+1)
	default:
		// tmpfs, dir, proc, dev, mqueue: empty but for what the
		// kernel puts there.
		return rel == "." || o.Kind == bwrap.Proc || o.Kind == bwrap.Dev
	}
}

// relTo returns path relative to dir if path is dir or below it.
func relTo(path, dir string) (string, bool) {
	if path == dir {
		return ".", true
	}
	if dir == "/" {
		return strings.TrimPrefix(path, "/"), true
	}
	if strings.HasPrefix(path, dir+"/") {
		return path[len(dir)+1:], true
	}
	return "", false
}

// under reports whether path is strictly below dir.
func under(path, dir string) bool {
	if path == "" || dir == "" {
		return false
	}
	if dir == "/" {
		return path != "/" && strings.HasPrefix(path, "/")
	}
	return strings.HasPrefix(path, dir+"/")
}

// LegacyTmp is the host directory that launchers before the tmpfs /tmp
// bound at /tmp: what earlier sandboxes wrote there stays hostile input,
// so it counts among the places the sandbox writes.
func LegacyTmp(uid int) string { return "/tmp/claude-private-" + strconv.Itoa(uid) }
