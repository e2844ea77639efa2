//go:build !linux

package cgroup

import "errors"

// DirFS is the FS of the hierarchy mounted at dir.
type DirFS string

// ReadFile is not supported on this OS.
func (DirFS) ReadFile(string) ([]byte, error) { return nil, errors.ErrUnsupported }

// Owner is not supported on this OS.
func (DirFS) Owner(string) (int, error) { return 0, errors.ErrUnsupported }

// ForSelf finds nothing on this OS.
func ForSelf(int) Delegation { return Delegation{Why: "cgroups are Linux's"} }

// Group is a sandbox's cgroup.
type Group struct{ Path string }

// FD is not supported on this OS.
func (*Group) FD() int { return -1 }

// Make is not supported on this OS.
func Make(Plan, string) (*Group, error) { return nil, errors.ErrUnsupported }

// Remove is not supported on this OS.
func (*Group) Remove() error { return errors.ErrUnsupported }
