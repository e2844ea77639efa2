package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// DirFS is the FS of the hierarchy mounted at dir (Root, or a fake one in
// tests).
type DirFS string

// ReadFile reads name below the hierarchy, not through a symlink.
func (d DirFS) ReadFile(name string) ([]byte, error) {
	f, err := os.OpenFile(filepath.Join(string(d), name), os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, 4096)
	n, err := f.Read(b)
	if err != nil && n == 0 {
		return nil, err
	}
	return b[:n], nil
}

// Owner is the uid of name below the hierarchy.
func (d DirFS) Owner(name string) (int, error) {
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(string(d), name), &st); err != nil {
		return 0, err
	}
	return int(st.Uid), nil
}

// ForSelf is Find for the calling process's cgroup on the host's
// hierarchy (Root), the Why of its Delegation saying what it could not
// read.
func ForSelf(uid int) Delegation {
	b, err := os.ReadFile(ProcSelf)
	if err != nil {
		return Delegation{Why: err.Error()}
	}
	self, err := Self(b)
	if err != nil {
		return Delegation{Why: err.Error()}
	}
	return Find(DirFS(Root), self, uid)
}

// Group is a sandbox's cgroup, made and limited.
type Group struct {
	// Path is its directory.
	Path string
	dir  *os.File
}

// FD is an fd of the group's directory, for clone3's CLONE_INTO_CGROUP
// (syscall.SysProcAttr.CgroupFD): the child starts in the group.
func (g *Group) FD() int { return int(g.dir.Fd()) }

// Make makes the cgroup name below p.Parent and writes its limits; on
// error it leaves nothing behind.
func Make(p Plan, name string) (*Group, error) {
	dir := filepath.Join(p.Parent, name)
	err := os.Mkdir(dir, 0o755)
	if errors.Is(err, os.ErrExist) {
		// A launcher of the same pid that ended without removing it.
		if unix.Rmdir(dir) == nil {
			err = os.Mkdir(dir, 0o755)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cgroup %s: %w", dir, err)
	}
	g := &Group{Path: dir}
	fail := func(err error) (*Group, error) {
		g.Remove()
		return nil, err
	}
	g.dir, err = os.OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return fail(fmt.Errorf("cgroup %s: %w", dir, err))
	}
	for _, w := range p.Writes {
		fd, err := unix.Openat(int(g.dir.Fd()), w.File, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fail(fmt.Errorf("cgroup %s: %w", filepath.Join(dir, w.File), os.NewSyscallError("open", err)))
		}
		_, err = unix.Write(fd, []byte(w.Value))
		unix.Close(fd)
		if err != nil {
			return fail(fmt.Errorf("cgroup %s: write %s: %w", filepath.Join(dir, w.File), w.Value, os.NewSyscallError("write", err)))
		}
	}
	return g, nil
}

// Remove removes the group once no process is left in it.
func (g *Group) Remove() error {
	if g.dir != nil {
		g.dir.Close()
	}
	if err := unix.Rmdir(g.Path); err != nil {
		return fmt.Errorf("cgroup %s: %w", g.Path, os.NewSyscallError("rmdir", err))
	}
	return nil
}
