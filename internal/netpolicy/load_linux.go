package netpolicy

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// maxConfigSize bounds the config file.
const maxConfigSize = 1 << 20

// LoadConfig reads and parses the config file at path. A missing file is an
// empty config. The file must be a regular file owned by root and writable by
// no one else, in directories that only root can change (or sticky ones);
// it is checked on the descriptor it is read from.
func LoadConfig(path string) (Config, error) {
	return loadFile(path, ParseConfig)
}

// LoadNamespace returns the effective config of namespace name: the main
// file at path, merged with netns-firewall.d/NAME.conf beside it when that
// exists (see Merge), with the domains of its presets (files of presetDir)
// added. Every file is checked as LoadConfig checks the main one. Domain
// and preset lines without a policy line are an error.
func LoadNamespace(path, name, presetDir string) (Config, error) {
	main, err := LoadConfig(path)
	if err != nil {
		return Config{}, err
	}
	ns, err := loadFile(NamespaceFile(path, name), ParseNamespaceConfig)
	if err != nil {
		return Config{}, err
	}
	c := Merge(main, ns)
	seen := map[string]bool{}
	for _, p := range c.Presets {
		if seen[p] {
			continue
		}
		seen[p] = true
		file := filepath.Join(presetDir, p)
		var domains []Domain
		_, err := loadFile(file, func(file string, data []byte) (Config, error) {
			var err error
			domains, err = ParsePreset(file, data)
			return Config{}, err
		})
		if err != nil {
			return Config{}, err
		}
		if domains == nil {
			if _, err := os.Stat(file); err != nil {
				return Config{}, fmt.Errorf("preset %s: %s is missing: is it installed (make install-network)?", p, file)
			}
		}
		for i := range domains {
			domains[i].Source = "preset " + p
		}
		c.Domains = append(c.Domains, domains...)
	}
	if c.Policy == "" && (len(c.Domains) > 0 || len(c.Presets) > 0) {
		return Config{}, fmt.Errorf("%s: domain and preset lines need a policy line: add policy allowlist", path)
	}
	return c, nil
}

// AnyPolicy reports whether the bridge firewall must let DNS in to the
// gateway, where netns-dns listens: when c (a namespace's config) has a
// policy, or any namespace has its own file beside the main file at path.
func AnyPolicy(path string, c Config) bool {
	if c.Policy != "" {
		return true
	}
	entries, _ := os.ReadDir(filepath.Dir(NamespaceFile(path, "x")))
	return len(entries) > 0
}

func loadFile(path string, parse func(string, []byte) (Config, error)) (Config, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if errors.Is(err, unix.ENOENT) {
		return Config{}, nil
	}
	if errors.Is(err, unix.ELOOP) {
		return Config{}, fmt.Errorf("%s: is a symlink: make it a regular file owned by root", path)
	}
	if err != nil {
		return Config{}, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return Config{}, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if err := checkOwner(path, &st, false); err != nil {
		return Config{}, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return Config{}, fmt.Errorf("%s: not a regular file", path)
	}
	if st.Size > maxConfigSize {
		return Config{}, fmt.Errorf("%s: %d bytes, larger than %d", path, st.Size, maxConfigSize)
	}
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		var dst unix.Stat_t
		if err := unix.Stat(dir, &dst); err != nil {
			return Config{}, &fs.PathError{Op: "stat", Path: dir, Err: err}
		}
		if err := checkOwner(dir, &dst, true); err != nil {
			return Config{}, fmt.Errorf("%s: %w", path, err)
		}
		if dir == "/" || dir == "." {
			break
		}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxConfigSize+1))
	if err != nil {
		return Config{}, fmt.Errorf("read %s: %w", path, err)
	}
	return parse(path, data)
}

// checkOwner refuses what someone other than root could change: owned by
// another user, writable by a group other than root's or by others. A sticky
// directory (/tmp) is fine: only an entry's owner may replace it there.
func checkOwner(path string, st *unix.Stat_t, dir bool) error {
	if st.Uid != 0 {
		return fmt.Errorf("%s: owned by uid %d, not root: chown root:root %s", path, st.Uid, path)
	}
	groupWritable := st.Mode&0o020 != 0 && st.Gid != 0
	othersWritable := st.Mode&0o002 != 0 && !(dir && st.Mode&unix.S_ISVTX != 0)
	if groupWritable || othersWritable {
		return fmt.Errorf("%s: writable by group or others (mode %04o): chmod go-w %s", path, st.Mode&0o7777, path)
	}
	return nil
}
