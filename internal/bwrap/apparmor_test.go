package bwrap

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fakeBwrap writes a script that records that it ran, prints stderr and
// exits with code.
func fakeBwrap(t *testing.T, stderr string, code int) (path, ran string) {
	t.Helper()
	dir := t.TempDir()
	path = filepath.Join(dir, "bwrap")
	ran = filepath.Join(dir, "ran")
	script := "#!/bin/sh\necho \"$@\" >" + ran + "\nprintf '%s\\n' '" + stderr + "' >&2\nexit " + string(rune('0'+code)) + "\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path, ran
}

func TestCheckAppArmor(t *testing.T) {
	plan := Plan{Unshare: []string{"user", "pid"}, DisableUserns: true, DieWithParent: true, SeccompFD: 4,
		Ops: []Op{{Kind: ROBind, Src: "/usr", Dest: "/usr"}}}
	const uidMap = "bwrap: setting up uid map: Permission denied"
	const loopback = "bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted"
	tests := []struct {
		name       string
		restricted string // the sysctl's value, "" for a kernel without it
		profile    string // installed profile text, with @BWRAP@ for the fake's path
		stderr     string
		code       int
		wantRun    bool
		want       string // substring of the error, "" for none
	}{
		{"no restriction: no probe", "", "", uidMap, 1, false, ""},
		{"restriction off: no probe", "0", "", uidMap, 1, false, ""},
		{"restricted, bwrap works", "1", "", "", 0, true, ""},
		{"restricted, no profile", "1", "", uidMap, 1, true, "run sudo make install (in the claude-sandbox source tree: it installs and loads /etc/apparmor.d/claude-sandbox-bwrap)"},
		{"restricted, loopback variant", "1", "", loopback, 1, true, "run sudo make install"},
		{"restricted, profile not loaded", "1", "profile claude-sandbox-bwrap @BWRAP@ flags=(attach_disconnected) {", uidMap, 1, true, "run sudo apparmor_parser -r /etc/apparmor.d/claude-sandbox-bwrap"},
		{"restricted, profile for another bwrap", "1", "profile claude-sandbox-bwrap /usr/bin/bwrap flags=(attach_disconnected) {", uidMap, 1, true, "run sudo make install BWRAP="},
		{"restricted, other failure left to the launch", "1", "", "bwrap: execvp true: No such file or directory", 1, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, ran := fakeBwrap(t, tt.stderr, tt.code)
			files := map[string]string{}
			if tt.restricted != "" {
				files[SysctlAppArmor] = tt.restricted + "\n"
			}
			if tt.profile != "" {
				files[AppArmorProfilePath] = strings.ReplaceAll(tt.profile, "@BWRAP@", path)
			}
			err := CheckAppArmor(context.Background(), path, plan, func(p string) (string, error) {
				if v, ok := files[p]; ok {
					return v, nil
				}
				return "", os.ErrNotExist
			})
			args, rerr := os.ReadFile(ran)
			if (rerr == nil) != tt.wantRun {
				t.Fatalf("probe ran = %v, want %v", rerr == nil, tt.wantRun)
			}
			if tt.wantRun {
				want := strings.Join(ProbeArgs(plan), " ") + "\n"
				if string(args) != want {
					t.Errorf("probe args = %q, want %q", args, want)
				}
			}
			if tt.want == "" {
				if err != nil {
					t.Fatalf("CheckAppArmor = %v, want nil", err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrAppArmor) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("CheckAppArmor = %v, want ErrAppArmor containing %q", err, tt.want)
			}
			if tt.stderr != "" && !strings.Contains(err.Error(), tt.stderr) {
				t.Errorf("CheckAppArmor = %v, want bwrap's words %q quoted", err, tt.stderr)
			}
		})
	}
}

func TestProbeArgs(t *testing.T) {
	plan := Plan{Unshare: []string{"user", "pid", "ipc", "uts", "cgroup"}, DisableUserns: true, DieWithParent: true, SeccompFD: 4,
		Ops: []Op{{Kind: Bind, Src: "/home", Dest: "/home"}}, Chdir: "/home"}
	got := ProbeArgs(plan)
	want := []string{"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup",
		"--disable-userns", "--assert-userns-disabled", "--die-with-parent",
		"--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ProbeArgs = %q, want %q", got, want)
	}
}
