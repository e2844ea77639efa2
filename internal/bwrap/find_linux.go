package bwrap

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// DefaultPath is where distributions install bwrap.
const DefaultPath = "/usr/bin/bwrap"

// ErrNotFound is returned by Find when there is no usable bwrap.
var ErrNotFound = errors.New("bwrap not found: install bubblewrap (Debian/Ubuntu: apt install bubblewrap; Fedora: dnf install bubblewrap; Arch: pacman -S bubblewrap)")

// Find returns DefaultPath if it exists, else the first bwrap in a
// directory of pathEnv that root owns and nobody else can write (a bwrap
// from a user-writable directory would let anyone who can write there
// replace the sandbox).
func Find(pathEnv string) (string, error) {
	if _, err := os.Stat(DefaultPath); err == nil {
		return DefaultPath, nil
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if !filepath.IsAbs(dir) || !rootOwned(dir) {
			continue
		}
		p := filepath.Join(dir, "bwrap")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && rootOwned(p) {
			return p, nil
		}
	}
	return "", ErrNotFound
}

func rootOwned(p string) bool {
	fi, err := os.Stat(p)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Uid == 0 && fi.Mode().Perm()&0o022 == 0
}

// Check checks that the bwrap at path is not setuid and is new enough, and
// that the kernel lets this user create user namespaces. The version is
// cached in cacheDir (if not empty), keyed on the binary's device, inode,
// size, mtime and ctime, so that `bwrap --version` runs only after bwrap
// changes.
func Check(path, cacheDir string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotFound, err)
	}
	if fi.Mode()&fs.ModeSetuid != 0 {
		return fmt.Errorf("%s is setuid root: the sandbox needs bwrap to run unprivileged in a user namespace: run sudo chmod u-s %s (Debian: sudo dpkg-statoverride --remove %s first, if listed)", path, path, path)
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	key := ""
	if st != nil {
		key = fmt.Sprintf("%s %d %d %d %d.%d %d.%d", path, st.Dev, st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec)
	}
	cache := ""
	if cacheDir != "" {
		cache = filepath.Join(cacheDir, "bwrap-version")
	}
	v, ok := cachedVersion(cache, key)
	if !ok {
		// In /, with PATH alone, as the probe (apparmor.go): the
		// launcher's directory is the project, which the sandbox writes,
		// and an LD_LIBRARY_PATH with an empty entry names it.
		cmd := exec.Command(path, "--version")
		cmd.Dir, cmd.Env = "/", []string{"PATH=/usr/bin:/bin"}
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("%s --version: %v", path, err)
		}
		if v, err = ParseVersion(string(out)); err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		storeVersion(cache, key, v)
	}
	if !AtLeast(v, MinVersion) {
		return fmt.Errorf("%s is bubblewrap %s: %s or newer is needed (for --disable-userns): upgrade bubblewrap", path, VersionString(v), VersionString(MinVersion))
	}
	return CheckUserns(func(p string) (string, error) {
		b, err := os.ReadFile(p)
		return string(b), err
	})
}

func cachedVersion(cache, key string) ([3]int, bool) {
	if cache == "" || key == "" {
		return [3]int{}, false
	}
	b, err := os.ReadFile(cache)
	if err != nil {
		return [3]int{}, false
	}
	k, ver, ok := strings.Cut(strings.TrimSuffix(string(b), "\n"), "\t")
	if !ok || k != key {
		return [3]int{}, false
	}
	v, err := ParseVersion("bubblewrap " + ver)
	return v, err == nil
}

// storeVersion writes the cache; failures only cost a `bwrap --version`
// next time.
func storeVersion(cache, key string, v [3]int) {
	if cache == "" || key == "" {
		return
	}
	if err := os.MkdirAll(filepath.Dir(cache), 0o700); err != nil {
		return
	}
	f, err := os.CreateTemp(filepath.Dir(cache), ".bwrap-version.*")
	if err != nil {
		return
	}
	_, err = fmt.Fprintf(f, "%s\t%s\n", key, VersionString(v))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), cache)
	}
	if err != nil {
		os.Remove(f.Name())
	}
}
