package netnssetup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/netcfg"
)

// nsState is what is at /run/netns/NAME.
type nsState int

const (
	nsMissing nsState = iota
	nsPresent         // a bind mount of a network namespace
	nsStale           // an empty file: an up killed before it mounted
)

// inspectNetns tells what path is, refusing what up did not make.
func inspectNetns(path string) (nsState, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); errors.Is(err, unix.ENOENT) {
		return nsMissing, nil
	} else if err != nil {
		return 0, os.NewSyscallError("lstat "+path, err)
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(path, &sfs); err != nil {
		return 0, os.NewSyscallError("statfs "+path, err)
	}
	if sfs.Type == unix.NSFS_MAGIC {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return 0, os.NewSyscallError("open "+path, err)
		}
		defer unix.Close(fd)
		typ, err := unix.IoctlRetInt(fd, unix.NS_GET_NSTYPE)
		if err != nil {
			return 0, os.NewSyscallError("ioctl NS_GET_NSTYPE "+path, err)
		}
		if typ != unix.CLONE_NEWNET {
			return 0, fmt.Errorf("%s is a namespace but not a network namespace: remove it (umount %s; rm %s)", path, path, path)
		}
		return nsPresent, nil
	}
	if st.Mode&unix.S_IFMT == unix.S_IFREG && st.Size == 0 {
		return nsStale, nil
	}
	return 0, fmt.Errorf("%s exists and is not a network namespace: remove it", path)
}

// makeRunDirShared makes dir a shared mount, as ip netns add does, so that
// unmounting a namespace there also unmounts it in mount namespaces that
// copied this one (sandboxes, services with PrivateTmp): otherwise they would
// keep a removed namespace alive.
func makeRunDirShared(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	err := unix.Mount("", dir, "none", unix.MS_SHARED|unix.MS_REC, "")
	if errors.Is(err, unix.EINVAL) {
		// Not a mount point yet: make it one.
		if err := unix.Mount(dir, dir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return os.NewSyscallError("mount --bind "+dir, err)
		}
		err = unix.Mount("", dir, "none", unix.MS_SHARED|unix.MS_REC, "")
	}
	if err != nil {
		return os.NewSyscallError("mount --make-rshared "+dir, err)
	}
	return nil
}

// createNetns makes a new network namespace and binds it at path.
//
// Preconditions: path does not exist; its directory is a shared mount.
func createNetns(path string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0)
	if err != nil {
		return os.NewSyscallError("create "+path, err)
	}
	unix.Close(fd)
	err = onThread(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return os.NewSyscallError("unshare", err)
		}
		if err := unix.Mount("/proc/thread-self/ns/net", path, "none", unix.MS_BIND, ""); err != nil {
			return os.NewSyscallError("mount --bind", err)
		}
		return nil
	})
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("create network namespace %s: %w", path, err)
	}
	return nil
}

// removeNetns unmounts and removes the namespace at path (lazily: processes
// inside keep it until they exit, but it is gone from the host's view).
func removeNetns(path string) error {
	state, err := inspectNetns(path)
	if err != nil || state == nsMissing {
		return err
	}
	if state == nsPresent {
		if err := unix.Unmount(path, unix.MNT_DETACH); err != nil {
			return os.NewSyscallError("umount "+path, err)
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// inNetns runs f on a thread in the network namespace at path.
func inNetns(path string, f func() error) error {
	return onThread(func() error {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return os.NewSyscallError("open "+path, err)
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			return os.NewSyscallError("setns", err)
		}
		return f()
	})
}

// onThread runs f on a locked OS thread that is thrown away afterwards: the
// goroutine exits without unlocking it, so the Go runtime ends the thread
// instead of reusing it in whatever namespace f left it in.
func onThread(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		errc <- f()
	}()
	return <-errc
}

// sysctl names a file below /proc/sys/net: the view of the calling thread's
// network namespace.
func sysctlPath(key string) string {
	return filepath.Join("/proc/sys", strings.ReplaceAll(key, ".", "/"))
}

func readSysctl(key string) (string, error) {
	b, err := os.ReadFile(sysctlPath(key))
	return strings.TrimSpace(string(b)), err
}

func writeSysctl(key, value string) error {
	return os.WriteFile(sysctlPath(key), []byte(value+"\n"), 0o644)
}

// namespace makes the namespace's bind mount at cfg.NetnsPath(name) unless
// one is there (a stale one, whose namespace is gone, is replaced) and
// returns its path; a namespace this run made is removed again on failure.
func namespace(cfg netcfg.Config, name string, undo *undoStack) (string, error) {
	path := cfg.NetnsPath(name)
	state, err := inspectNetns(path)
	if err != nil {
		return "", err
	}
	if state == nsPresent {
		return path, nil
	}
	if state == nsStale {
		if err := os.Remove(path); err != nil {
			return "", err
		}
	}
	if err := makeRunDirShared(cfg.RunDir); err != nil {
		return "", err
	}
	if err := createNetns(path); err != nil {
		return "", err
	}
	undo.push("namespace "+path, func() error { return removeNetns(path) })
	return path, nil
}
