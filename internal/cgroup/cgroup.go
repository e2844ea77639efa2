// Package cgroup finds a cgroup v2 subtree delegated to the user and plans
// the cgroup of one sandbox below it: where the launcher puts the sandbox
// when no systemd user manager can hold its budget.
package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Root is where the kernel's cgroup v2 hierarchy is mounted.
const Root = "/sys/fs/cgroup"

// ProcSelf is the file that names the launcher's own cgroup.
const ProcSelf = "/proc/self/cgroup"

// FS reads a cgroup v2 hierarchy: names are relative to its root
// ("a/b/cgroup.procs"; "." is the root).
type FS interface {
	ReadFile(name string) ([]byte, error)
	// Owner is the uid that owns name, not following a symlink.
	Owner(name string) (int, error)
}

// Delegation is a cgroup the user may make children in, limit them and
// move processes into (cgroup-v2.rst, "Delegation"): the directory and its
// cgroup.procs and cgroup.subtree_control are the user's.
type Delegation struct {
	// Dir is its path from the hierarchy's root ("" when there is none).
	Dir string
	// Controllers are those its children have (cgroup.subtree_control).
	Controllers []string
	// Why says why there is none, when Dir is "".
	Why string
}

// Has reports whether children of d have controller c.
func (d Delegation) Has(c string) bool { return slices.Contains(d.Controllers, c) }

// Self returns the launcher's cgroup v2 path ("/a/b") from the text of
// /proc/self/cgroup: its "0::" line.
func Self(procCgroup []byte) (string, error) {
	s := bufio.NewScanner(bytes.NewReader(procCgroup))
	for s.Scan() {
		if p, ok := strings.CutPrefix(s.Text(), "0::"); ok && strings.HasPrefix(p, "/") {
			return path.Clean(p), nil
		}
	}
	return "", errors.New("the process is in no cgroup v2 (no 0:: line in " + ProcSelf + ")")
}

// Find returns the delegation nearest to the cgroup self: its parent, or
// a parent of that, below the hierarchy's root, whose directory,
// cgroup.procs and cgroup.subtree_control uid owns. self itself cannot be
// one: it holds the launcher, and a cgroup with processes cannot give
// its children controllers. The launcher's child can move from self into
// a child of the delegation, since uid may write the cgroup.procs of
// their common ancestor.
func Find(f FS, self string, uid int) Delegation {
	if _, err := f.ReadFile("cgroup.controllers"); err != nil {
		return Delegation{Why: fmt.Sprintf("no cgroup v2 hierarchy at %s (cgroup v1?)", Root)}
	}
	rel := strings.TrimPrefix(path.Clean(self), "/")
	for d := path.Dir(rel); d != "." && d != "/" && d != ""; d = path.Dir(d) {
		if !ownedBy(f, uid, d, d+"/cgroup.procs", d+"/cgroup.subtree_control") {
			continue
		}
		b, err := f.ReadFile(d + "/cgroup.subtree_control")
		if err != nil {
			continue
		}
		return Delegation{Dir: d, Controllers: strings.Fields(string(b))}
	}
	return Delegation{Why: fmt.Sprintf("no cgroup above yours (%s) is delegated to uid %d", self, uid)}
}

func ownedBy(f FS, uid int, names ...string) bool {
	for _, n := range names {
		if o, err := f.Owner(n); err != nil || o != uid {
			return false
		}
	}
	return true
}

// Write is one file of a sandbox's cgroup and what is written to it.
type Write struct{ File, Value string }

// Plan is the cgroup of one sandbox: a child of a delegation, and its
// limits.
type Plan struct {
	// Parent is the delegation's directory, absolute (below Root).
	Parent string
	// Writes set the limits, in order, before any process is in it.
	Writes []Write
}

// CPUPeriod is the period of cpu.max, in microseconds (the kernel's
// default).
const CPUPeriod = 100000

// NewPlan plans the cgroup of a sandbox below d with the limits that are
// not 0: memory in bytes, tasks, cpu in percent of one CPU. With the
// memory controller, an OOM kill of one process kills all of the cgroup's
// (memory.oom.group), as OOMPolicy=kill does for a scope.
func NewPlan(d Delegation, memory, tasks, cpu uint64) Plan {
	p := Plan{Parent: path.Join(Root, d.Dir)}
	if memory != 0 {
		p.Writes = append(p.Writes, Write{"memory.max", strconv.FormatUint(memory, 10)})
	}
	if d.Has("memory") {
		p.Writes = append(p.Writes, Write{"memory.oom.group", "1"})
	}
	if tasks != 0 {
		p.Writes = append(p.Writes, Write{"pids.max", strconv.FormatUint(tasks, 10)})
	}
	if cpu != 0 {
		p.Writes = append(p.Writes, Write{"cpu.max", fmt.Sprintf("%d %d", cpu*CPUPeriod/100, CPUPeriod)})
	}
	return p
}

// Name is the name of the cgroup of the sandbox that launcher pid starts.
func Name(pid int) string { return "claude-sandbox-" + strconv.Itoa(pid) }
