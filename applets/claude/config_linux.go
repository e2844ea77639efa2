package claude

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/hostpath"
	"github.com/claude-sandbox/claude-sandbox/internal/sandboxcfg"
)

// loadConfig opens the config file without trusting names (hostpath) and
// reads it from that fd. The walk is kept (the caller closes it) for
// trustConfig, which needs the sandbox's writable mounts.
func loadConfig(path string, uid int) (*hostpath.Resolved, []byte, error) {
	r, err := hostpath.Open(path, true)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", configName, err)
	}
	if r.Stat.Mode&unix.S_IFMT != unix.S_IFREG {
		r.Close()
		return nil, nil, fmt.Errorf("%s: not a regular file", configName)
	}
	// Reopen the very file the walk found, for reading.
	fd, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", r.File.Fd()), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		r.Close()
		return nil, nil, fmt.Errorf("%s: %w", configName, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	b, err := sandboxcfg.Read(f, configName, uid)
	if err != nil {
		r.Close()
		return nil, nil, err
	}
	return r, b, nil
}

// trustConfig refuses the config file (cfg, nil if there is none) when it,
// or a symlink followed on its way, lies where the sandbox can write: the
// agent could rewrite what it sees at the next start.
func trustConfig(cfg *hostpath.Resolved, b *bound) error {
	if cfg == nil {
		return nil
	}
	w, err := b.inWritable(cfg)
	if err != nil {
		return fmt.Errorf("%s: %w", configName, err)
	}
	if w != "" {
		return fmt.Errorf("%s: %s lies in %s, which the sandbox can write: the agent could rewrite it: move the file out of it, or do not bind %s rw", configName, cfg.Path, w, w)
	}
	if err := b.checkHops(cfg); err != nil {
		return fmt.Errorf("%s: %w", configName, err)
	}
	return nil
}
