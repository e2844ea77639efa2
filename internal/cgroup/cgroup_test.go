package cgroup

import (
	"io/fs"
	"slices"
	"testing"
)

// fakeFS is a hierarchy of files with owners.
type fakeFS map[string]struct {
	owner int
	text  string
}

func (f fakeFS) ReadFile(name string) ([]byte, error) {
	e, ok := f[name]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return []byte(e.text), nil
}

func (f fakeFS) Owner(name string) (int, error) {
	e, ok := f[name]
	if !ok {
		return 0, fs.ErrNotExist
	}
	return e.owner, nil
}

// delegated adds the cgroup dir, owned by uid, with controllers for its
// children.
func (f fakeFS) delegated(dir string, uid int, controllers string) {
	f[dir] = struct {
		owner int
		text  string
	}{uid, ""}
	f[dir+"/cgroup.procs"] = struct {
		owner int
		text  string
	}{uid, ""}
	f[dir+"/cgroup.subtree_control"] = struct {
		owner int
		text  string
	}{uid, controllers + "\n"}
}

func TestSelf(t *testing.T) {
	tests := []struct {
		name, in, want string
		ok             bool
	}{
		{"v2", "0::/user.slice/user-1000.slice/session-2.scope\n", "/user.slice/user-1000.slice/session-2.scope", true},
		{"hybrid", "12:memory:/x\n1:name=systemd:/a\n0::/a\n", "/a", true},
		{"v1", "4:memory:/process_api/0b5f\n1:cpu:/\n", "", false},
		{"root", "0::/\n", "/", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Self([]byte(tt.in))
			if got != tt.want || (err == nil) != tt.ok {
				t.Errorf("Self(%q) = %q, %v, want %q, ok %v", tt.in, got, err, tt.want, tt.ok)
			}
		})
	}
}

func TestFind(t *testing.T) {
	const uid = 1000
	v2 := func() fakeFS {
		f := fakeFS{}
		f["cgroup.controllers"] = struct {
			owner int
			text  string
		}{0, "cpu memory pids\n"}
		return f
	}
	tests := []struct {
		name  string
		fs    fakeFS
		self  string
		want  Delegation
		setup func(fakeFS)
	}{
		{"parent delegated", v2(), "/box/user/login",
			Delegation{Dir: "box/user", Controllers: []string{"cpu", "memory", "pids"}},
			func(f fakeFS) { f.delegated("box/user", uid, "cpu memory pids") }},
		{"grandparent delegated", v2(), "/box/user/a/login",
			Delegation{Dir: "box/user", Controllers: []string{"memory"}},
			func(f fakeFS) { f.delegated("box/user", uid, "memory"); f.delegated("box/user/a", 0, "memory") }},
		{"own cgroup only", v2(), "/box/login",
			Delegation{Why: "no cgroup above yours (/box/login) is delegated to uid 1000"},
			func(f fakeFS) { f.delegated("box/login", uid, "memory"); f.delegated("box", 0, "memory") }},
		{"procs not the user's", v2(), "/box/user/login",
			Delegation{Why: "no cgroup above yours (/box/user/login) is delegated to uid 1000"},
			func(f fakeFS) {
				f.delegated("box/user", uid, "memory")
				f["box/user/cgroup.procs"] = struct {
					owner int
					text  string
				}{0, ""}
			}},
		{"another user's", v2(), "/box/user/login",
			Delegation{Why: "no cgroup above yours (/box/user/login) is delegated to uid 1000"},
			func(f fakeFS) { f.delegated("box/user", 1001, "memory") }},
		{"never the root", v2(), "/login",
			Delegation{Why: "no cgroup above yours (/login) is delegated to uid 1000"},
			func(f fakeFS) { f.delegated(".", uid, "memory") }},
		{"no controllers", v2(), "/box/user/login",
			Delegation{Dir: "box/user", Controllers: []string{}},
			func(f fakeFS) { f.delegated("box/user", uid, "") }},
		{"cgroup v1", fakeFS{}, "/",
			Delegation{Why: "no cgroup v2 hierarchy at /sys/fs/cgroup (cgroup v1?)"}, func(fakeFS) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.setup(tt.fs)
			got := Find(tt.fs, tt.self, uid)
			if got.Dir != tt.want.Dir || got.Why != tt.want.Why || !slices.Equal(got.Controllers, tt.want.Controllers) {
				t.Errorf("Find(%s) = %+v, want %+v", tt.self, got, tt.want)
			}
		})
	}
}

func TestNewPlan(t *testing.T) {
	all := Delegation{Dir: "box/user", Controllers: []string{"cpu", "memory", "pids"}}
	tests := []struct {
		name               string
		d                  Delegation
		memory, tasks, cpu uint64
		want               []Write
	}{
		{"all", all, 256 << 20, 64, 50, []Write{{"memory.max", "268435456"}, {"memory.oom.group", "1"}, {"pids.max", "64"}, {"cpu.max", "50000 100000"}}},
		{"two cpus", all, 0, 0, 200, []Write{{"memory.oom.group", "1"}, {"cpu.max", "200000 100000"}}},
		{"no memory controller", Delegation{Dir: "d", Controllers: []string{"pids"}}, 0, 10, 0, []Write{{"pids.max", "10"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPlan(tt.d, tt.memory, tt.tasks, tt.cpu)
			if p.Parent != "/sys/fs/cgroup/"+tt.d.Dir || !slices.Equal(p.Writes, tt.want) {
				t.Errorf("NewPlan = %+v, want parent /sys/fs/cgroup/%s and writes %v", p, tt.d.Dir, tt.want)
			}
		})
	}
}
