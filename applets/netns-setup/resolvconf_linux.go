package netnssetup

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/netcfg"
)

// resolvConf writes the namespace's resolv.conf; a file this run made is
// removed again on failure.
func resolvConf(cfg netcfg.Config, name string, dns dnsPlan, undo *undoStack) error {
	created, err := writeResolvConf(cfg, name, netcfg.ResolvConf(name, dns.resolvers, dns.hostResolv))
	if err != nil {
		return err
	}
	if created {
		undo.push(cfg.ResolvConfPath(name), func() error { return removeResolvConf(cfg, name) })
	}
	return nil
}

// writeResolvConf writes the namespace's resolv.conf atomically; created
// says whether it did not exist before.
func writeResolvConf(cfg netcfg.Config, name string, content []byte) (created bool, err error) {
	path := cfg.ResolvConfPath(name)
	old, err := os.ReadFile(path)
	if err == nil && bytes.Equal(old, content) {
		return false, nil
	}
	if err == nil && !bytes.HasPrefix(old, []byte(netcfg.ResolvHeader)) {
		return false, fmt.Errorf("%s exists and was not written by netns-setup: remove it", path)
	}
	created = errors.Is(err, os.ErrNotExist)
	return created, writeFileAtomic(path, content)
}

// removeResolvConf removes the resolv.conf up wrote, and its directory if
// that is then empty.
func removeResolvConf(cfg netcfg.Config, name string) error {
	path := cfg.ResolvConfPath(name)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return rmdirIfEmpty(filepath.Dir(path))
	}
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(b, []byte(netcfg.ResolvHeader)) {
		return nil // not ours: leave it
	}
	if err := os.Remove(path); err != nil {
		return err
	}
	return rmdirIfEmpty(filepath.Dir(path))
}

func rmdirIfEmpty(dir string) error {
	err := unix.Rmdir(dir)
	if err == nil || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) {
		return nil
	}
	return os.NewSyscallError("rmdir "+dir, err)
}
