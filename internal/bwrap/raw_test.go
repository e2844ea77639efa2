package bwrap

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplitRaw(t *testing.T) {
	tests := []struct {
		args []string
		want []Op
		err  string
	}{
		{[]string{"--hostname", "h", "--remount-ro", "/x"}, []Op{{Kind: Raw, Args: []string{"--hostname", "h", "--remount-ro", "/x"}}}, ""},
		{[]string{"--perms", "0700", "--tmpfs", "/t", "--bind", "/a", "/b", "--new-session"}, []Op{
			{Kind: Raw, Args: []string{"--perms", "0700", "--tmpfs", "/t"}},
			{Kind: Bind, Src: "/a", Dest: "/b"},
			{Kind: Raw, Args: []string{"--new-session"}},
		}, ""},
		{[]string{"--dev-bind", "/dev/kvm", "/dev/kvm", "--ro-bind-try", "/c", "/d", "--dev-bind-try", "/e", "/f", "--bind-try", "/g", "/h", "--ro-bind", "/i", "/j"}, []Op{
			{Kind: DevBind, Src: "/dev/kvm", Dest: "/dev/kvm"}, {Kind: ROBindTry, Src: "/c", Dest: "/d"},
			{Kind: DevBindTry, Src: "/e", Dest: "/f"}, {Kind: BindTry, Src: "/g", Dest: "/h"}, {Kind: ROBind, Src: "/i", Dest: "/j"},
		}, ""},
		{[]string{"--bind", "/a"}, nil, "--bind takes 2 argument(s)"},
		{[]string{"--frob"}, nil, `unknown bwrap option "--frob"`},
		{[]string{"/bin/sh"}, nil, `"/bin/sh" is not a bwrap option`},
		{[]string{"--bind-fd", "5", "/x"}, nil, "--bind-fd: the launcher uses fds of its own"},
		{[]string{"--ro-bind-fd", "5", "/x"}, nil, "--ro-bind-fd: the launcher uses fds of its own"},
		{[]string{"--args", "3"}, nil, "--args: the launcher uses fds of its own"},
		{[]string{"--seccomp", "4"}, nil, "--seccomp: the launcher uses fds of its own"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got, err := SplitRaw(tt.args)
			if tt.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// A bind with an fd is made from the fd; a -try one becomes plain (the
// launcher found the source). Dev binds have no fd form.
func TestArgsBindFD(t *testing.T) {
	p := Plan{SeccompFD: -1, Ops: []Op{
		{Kind: ROBind, Src: "/usr", Dest: "/usr", SrcFD: 5},
		{Kind: ROBindTry, Src: "/etc/x", Dest: "/etc/x", SrcFD: 6},
		{Kind: Bind, Src: "/h/.claude-home", Dest: "/h", SrcFD: 7},
		{Kind: BindTry, Src: "/p", Dest: "/p", SrcFD: 8},
		{Kind: ROBind, Src: "/no-fd", Dest: "/no-fd"},
		{Kind: DevBind, Src: "/dev/kvm", Dest: "/dev/kvm"},
	}}
	want := []string{"--ro-bind-fd", "5", "/usr", "--ro-bind-fd", "6", "/etc/x", "--bind-fd", "7", "/h", "--bind-fd", "8", "/p",
		"--ro-bind", "/no-fd", "/no-fd", "--dev-bind", "/dev/kvm", "/dev/kvm"}
	if d := cmp.Diff(want, p.Args()); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// FuzzSplitRaw: whatever the arguments, SplitRaw either refuses them or
// returns ops that give back exactly the arguments, in order, with every
// bind option as a bind op.
func FuzzSplitRaw(f *testing.F) {
	f.Add("--bind\x00/a\x00/b\x00--perms\x000700\x00--tmpfs\x00/t")
	f.Add("--ro-bind-try\x00/x\x00/y")
	f.Add("--setenv\x00A\x00--bind")
	f.Fuzz(func(t *testing.T, s string) {
		args := strings.Split(s, "\x00")
		if len(args) > 64 {
			return
		}
		ops, err := SplitRaw(args)
		if err != nil {
			return
		}
		var back []string
		for _, o := range ops {
			switch {
			case o.Kind == Raw:
				// Raw ops hold whole options: walk them by arity.
				for i := 0; i < len(o.Args); i += arity[o.Args[i]] + 1 {
					if _, ok := bindKinds[o.Args[i]]; ok {
						t.Fatalf("bind option %q left raw in %q", o.Args[i], args)
					}
					if _, ok := arity[o.Args[i]]; !ok {
						t.Fatalf("raw op %q does not start at an option", o.Args)
					}
				}
				back = append(back, o.Args...)
			case o.IsBind():
				back = append(back, flags[o.Kind], o.Src, o.Dest)
			default:
				t.Fatalf("op kind %v from %q", o.Kind, args)
			}
		}
		if !slices.Equal(back, args) {
			t.Fatalf("ops give back %q, want %q", back, args)
		}
	})
}
