package nspawn

import (
	"slices"
	"strings"
	"testing"
)

func TestNspawnArgs(t *testing.T) {
	tests := []struct {
		name       string
		opts       Options
		want       []string // in this order, before "--"
		wantInit   []string // after "--"
		wantAbsent []string
	}{
		{
			name:       "bare",
			want:       []string{"systemd-nspawn", "--register=no", "--keep-unit", "--private-network", "--machine=m", "--directory=/d", "--console=passive", "--boot"},
			wantInit:   []string{"systemd.unit=" + Target, "systemd.mask=getty.target"},
			wantAbsent: []string{"--volatile", "--bind-ro=", "--bind="},
		},
		{
			name:     "binds and masks",
			opts:     Options{BindRO: []string{"/a:/b"}, Bind: []string{"/c"}, Mask: []string{"x.service"}},
			want:     []string{"--boot", "--bind-ro=/a:/b", "--bind=/c"},
			wantInit: []string{"systemd.unit=" + Target, "systemd.mask=x.service"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := nspawnArgs("m", "/d", tt.opts)
			sep := slices.Index(args, "--")
			if sep < 0 {
				t.Fatalf("nspawnArgs = %q, want a -- before the init arguments", args)
			}
			if !inOrder(args[:sep], tt.want) {
				t.Errorf("nspawnArgs options = %q, want %q in this order", args[:sep], tt.want)
			}
			if !inOrder(args[sep+1:], tt.wantInit) {
				t.Errorf("nspawnArgs init arguments = %q, want %q in this order", args[sep+1:], tt.wantInit)
			}
			for _, a := range args {
				for _, bad := range tt.wantAbsent {
					if strings.HasPrefix(a, bad) {
						t.Errorf("nspawnArgs has %q, want no %q", a, bad)
					}
				}
			}
		})
	}
}

// inOrder reports whether want is a subsequence of got.
func inOrder(got, want []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

func TestTargetUnit(t *testing.T) {
	got := targetUnit([]string{"systemd-networkd.service"})
	for _, want := range []string{"Requires=basic.target\n", "Wants=dbus.socket systemd-logind.service systemd-user-sessions.service systemd-networkd.service\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("targetUnit = %q, want it to contain %q", got, want)
		}
	}
}

func TestHideList(t *testing.T) {
	for _, tt := range []struct {
		name  string
		paths []string
		want  string
		bad   bool
	}{
		{name: "none", want: ""},
		{name: "paths", paths: []string{"/var/log/netns-dns", "/opt/claude"}, want: "/var/log/netns-dns\n/opt/claude\n"},
		{name: "root", paths: []string{"/"}, bad: true},
		{name: "relative", paths: []string{"var/log"}, bad: true},
		{name: "unclean", paths: []string{"/var/../etc"}, bad: true},
		{name: "newline", paths: []string{"/a\n/etc"}, bad: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := hideList(tt.paths)
			if (err != nil) != tt.bad || got != tt.want {
				t.Errorf("hideList(%q) = %q, %v, want %q, error %v", tt.paths, got, err, tt.want, tt.bad)
			}
		})
	}
}
