package bwrap

import (
	"fmt"
	"strings"
)

// arity is the number of arguments each option of bwrap 0.8.0 takes.
var arity = map[string]int{
	"--help": 0, "--version": 0, "--args": 1, "--unshare-all": 0, "--share-net": 0,
	"--unshare-user": 0, "--unshare-user-try": 0, "--unshare-ipc": 0, "--unshare-pid": 0,
	"--unshare-net": 0, "--unshare-uts": 0, "--unshare-cgroup": 0, "--unshare-cgroup-try": 0,
	"--userns": 1, "--userns2": 1, "--disable-userns": 0, "--assert-userns-disabled": 0,
	"--pidns": 1, "--uid": 1, "--gid": 1, "--hostname": 1, "--chdir": 1, "--clearenv": 0,
	"--setenv": 2, "--unsetenv": 1, "--lock-file": 1, "--sync-fd": 1,
	"--bind": 2, "--bind-try": 2, "--dev-bind": 2, "--dev-bind-try": 2, "--ro-bind": 2,
	"--ro-bind-try": 2, "--bind-fd": 2, "--ro-bind-fd": 2, "--remount-ro": 1,
	"--exec-label": 1, "--file-label": 1, "--proc": 1, "--dev": 1, "--tmpfs": 1,
	"--mqueue": 1, "--dir": 1, "--file": 2, "--bind-data": 2, "--ro-bind-data": 2,
	"--symlink": 2, "--seccomp": 1, "--add-seccomp-fd": 1, "--block-fd": 1,
	"--userns-block-fd": 1, "--info-fd": 1, "--json-status-fd": 1, "--new-session": 0,
	"--die-with-parent": 0, "--as-pid-1": 0, "--cap-add": 1, "--cap-drop": 1,
	"--perms": 1, "--size": 1, "--chmod": 2,
}

var bindKinds = map[string]Kind{
	"--bind": Bind, "--bind-try": BindTry, "--dev-bind": DevBind, "--dev-bind-try": DevBindTry,
	"--ro-bind": ROBind, "--ro-bind-try": ROBindTry,
}

// SplitRaw turns raw bwrap options into ops: each bind option becomes a
// bind op (so that it is checked and bound like any other), the rest stay
// Raw, in order. Options that name the launcher's own fds (--bind-fd,
// --ro-bind-fd, --args, --seccomp) are refused, as is an option bwrap 0.8.0
// does not know or one that lacks arguments.
func SplitRaw(args []string) ([]Op, error) {
	var ops []Op
	var raw []string
	flush := func() {
		if len(raw) > 0 {
			ops = append(ops, Op{Kind: Raw, Args: raw})
			raw = nil
		}
	}
	for i := 0; i < len(args); {
		a := args[i]
		n, ok := arity[a]
		if !ok {
			if strings.HasPrefix(a, "--") {
				return nil, fmt.Errorf("unknown bwrap option %q", a)
			}
			return nil, fmt.Errorf("%q is not a bwrap option (the command is the agent's)", a)
		}
		switch a {
		case "--bind-fd", "--ro-bind-fd", "--args", "--seccomp":
			return nil, fmt.Errorf("%s: the launcher uses fds of its own: use ro, rw or seccomp-deny instead", a)
		}
		if i+n >= len(args) {
			return nil, fmt.Errorf("%s takes %d argument(s)", a, n)
		}
		if k, ok := bindKinds[a]; ok {
			flush()
			ops = append(ops, Op{Kind: k, Src: args[i+1], Dest: args[i+2]})
		} else {
			raw = append(raw, args[i:i+n+1]...)
		}
		i += n + 1
	}
	flush()
	return ops, nil
}
