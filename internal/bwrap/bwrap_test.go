package bwrap

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

func golden(t *testing.T, name, got string) {
	t.Helper()
	testutil.Golden(t, filepath.Join("testdata", name+".golden"), got)
}

func TestArgsGolden(t *testing.T) {
	tests := []struct {
		name string
		plan Plan
	}{
		{"empty", Plan{SeccompFD: -1}},
		{"every-op", Plan{
			Unshare:       []string{"user", "pid", "ipc", "uts", "cgroup"},
			DisableUserns: true,
			DieWithParent: true,
			Hostname:      "claude-sandbox",
			Ops: []Op{
				{Kind: ROBind, Src: "/usr/bin", Dest: "/usr/bin"},
				{Kind: ROBindTry, Src: "/usr/lib64", Dest: "/usr/lib64"},
				{Kind: Bind, Src: "/home/u/.claude-home", Dest: "/home/u"},
				{Kind: BindTry, Src: "/x", Dest: "/y"},
				{Kind: DevBind, Src: "/dev/kvm", Dest: "/dev/kvm"},
				{Kind: DevBindTry, Src: "/dev/dri", Dest: "/dev/dri"},
				{Kind: Tmpfs, Dest: "/dev/shm"},
				{Kind: Tmpfs, Dest: "/secret", Perms: 0o700},
				{Kind: Tmpfs, Dest: "/tmp", Size: 4 << 30},
				{Kind: Dir, Dest: "/run/user/1000", Perms: 0o700},
				{Kind: Dir, Dest: "/plain"},
				{Kind: Symlink, Src: "usr/bin", Dest: "/bin"},
				{Kind: Proc, Dest: "/proc"},
				{Kind: Dev, Dest: "/dev"},
				{Kind: Mqueue, Dest: "/dev/mqueue"},
				{Kind: Setenv, Src: "XDG_RUNTIME_DIR", Dest: "/run/user/1000"},
				{Kind: Unsetenv, Dest: "DBUS_SESSION_BUS_ADDRESS"},
				{Kind: Raw, Args: []string{"--remount-ro", "/home/u/x"}},
				{Kind: ROData, Dest: "/run/gen/npmrc", Data: []byte("registry=x\n"), Perms: 0o444, SrcFD: 9},
				{Kind: ROData, Dest: "/run/gen/unset", Data: []byte("x")},
			},
			Chdir:     "/home/u",
			SeccompFD: 4,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			golden(t, "args-"+tt.name, strings.Join(tt.plan.Args(), "\n")+"\n")
		})
	}
}

func TestArgv(t *testing.T) {
	got := Argv("/usr/bin/bwrap", 3, []string{"/opt/claude/bin/claude", "", "a b", "--x"})
	want := []string{"/usr/bin/bwrap", "--args", "3", "--", "/opt/claude/bin/claude", "", "a b", "--x"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Argv mismatch (-want +got):\n%s", diff)
	}
}

func TestEncode(t *testing.T) {
	got, err := Encode([]string{"--bind", "/a b", "/c\nd", ""})
	if err != nil {
		t.Fatal(err)
	}
	if want := "--bind\x00/a b\x00/c\nd\x00\x00"; string(got) != want {
		t.Errorf("Encode = %q, want %q", got, want)
	}
	if _, err := Encode([]string{"ok", "a\x00b"}); !errors.Is(err, ErrNUL) {
		t.Errorf("Encode with NUL: err = %v, want ErrNUL", err)
	}
}

func TestParseVersion(t *testing.T) {
	tests := []struct {
		name, in string
		want     [3]int
		ok, new  bool
	}{
		{"debian", "bubblewrap 0.8.0\n", [3]int{0, 8, 0}, true, true},
		{"newer", "bubblewrap 0.11.0", [3]int{0, 11, 0}, true, true},
		{"old", "bubblewrap 0.6.2\n", [3]int{0, 6, 2}, true, false},
		{"two parts", "bubblewrap 0.9", [3]int{0, 9, 0}, true, true},
		{"suffix", "bubblewrap 0.10.0-rc1", [3]int{0, 10, 0}, true, true},
		{"major", "bubblewrap 1.0.0", [3]int{1, 0, 0}, true, true},
		{"garbage", "bwrap: unknown option", [3]int{}, false, false},
		{"empty", "", [3]int{}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseVersion(tt.in)
			if (err == nil) != tt.ok {
				t.Fatalf("ParseVersion(%q) err = %v, want ok=%v", tt.in, err, tt.ok)
			}
			if !tt.ok {
				return
			}
			if got != tt.want || AtLeast(got, MinVersion) != tt.new {
				t.Errorf("ParseVersion(%q) = %v (new enough %v), want %v (%v)", tt.in, got, AtLeast(got, MinVersion), tt.want, tt.new)
			}
		})
	}
}

func TestCheckUserns(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]string
		want   string // substring of the error, "" for none
	}{
		{"upstream kernel", map[string]string{SysctlMaxUserns: "96364\n"}, ""},
		{"debian enabled", map[string]string{SysctlUsernsClone: "1\n", SysctlMaxUserns: "100"}, ""},
		{"debian disabled", map[string]string{SysctlUsernsClone: "0\n", SysctlMaxUserns: "100"}, "run sudo sysctl -w kernel.unprivileged_userns_clone=1"},
		// CheckAppArmor's to decide: a profile may exempt bwrap.
		{"ubuntu restricted", map[string]string{SysctlUsernsClone: "1\n", SysctlAppArmor: "1\n"}, ""},
		{"ubuntu unrestricted", map[string]string{SysctlUsernsClone: "1\n", SysctlAppArmor: "0\n"}, ""},
		{"max zero", map[string]string{SysctlMaxUserns: "0\n"}, "run sudo sysctl -w user.max_user_namespaces=16384"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckUserns(func(p string) (string, error) {
				if v, ok := tt.values[p]; ok {
					return v, nil
				}
				return "", os.ErrNotExist
			})
			if tt.want == "" {
				if err != nil {
					t.Fatalf("CheckUserns = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrUserns) {
				t.Fatalf("CheckUserns = %v, want an ErrUserns containing %q", err, tt.want)
			}
		})
	}
}
