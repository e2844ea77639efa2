package claude

import (
	"crypto/rand"
	"encoding/hex"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/quote"
)

// The agent's -w/--worktree [NAME] ("a session in a new git worktree")
// would make the worktree with the agent's git in the project's .git, which
// is read-only inside. The launcher takes the flag out of the agent's
// arguments, makes the worktree with the user's git on the host before the
// sandbox starts (worktree_linux.go), and runs the session there.

// worktreeFlag is what -w asked for.
type worktreeFlag struct {
	name string // never empty: one is made up when -w has none
	// given: the name was on the command line (one made up never names
	// an existing worktree).
	given bool
}

// maxWorktreeName bounds a worktree's name.
const maxWorktreeName = 64

// takeWorktree removes the agent's -w, -wNAME, --worktree, --worktree NAME
// and --worktree=NAME from args (before a --), as the agent's own parser
// reads them: a value is the next argument unless it starts with "-". A
// second one is refused, as is a name that is not one.
func takeWorktree(args []string) (*worktreeFlag, []string, error) {
	var wf *worktreeFlag
	rest := []string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		var name string
		var has bool
		switch {
		case a == "-w" || a == "--worktree":
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				name, has = args[i+1], true
				i++
			}
		case strings.HasPrefix(a, "--worktree="):
			name, has = strings.TrimPrefix(a, "--worktree="), true
		case strings.HasPrefix(a, "-w") && !strings.HasPrefix(a, "--"):
			name, has = a[2:], true
		default:
			rest = append(rest, a)
			continue
		}
		if wf != nil {
			return nil, nil, multicall.Usagef("%s: -w/--worktree given twice", a)
		}
		wf = &worktreeFlag{name: name, given: has}
		if !has {
			wf.name = madeUpWorktreeName()
		} else if err := checkWorktreeName(name); err != nil {
			return nil, nil, err
		}
	}
	if wf == nil {
		return nil, args, nil
	}
	return wf, rest, nil
}

// checkWorktreeName allows what is a safe file name and branch name
// component: letters, digits, '.', '_' and '-', not first a '.' or '-', no
// "..", no ".lock" at the end.
func checkWorktreeName(name string) error {
	ok := name != "" && len(name) <= maxWorktreeName && name[0] != '.' && name[0] != '-' &&
		!strings.Contains(name, "..") && !strings.HasSuffix(name, ".lock")
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			ok = false
		}
	}
	if !ok {
		return multicall.Usagef("-w %s: not a worktree name: use at most %d letters, digits, '.', '_' and '-', not first a '.' or '-'", quote.String(name), maxWorktreeName)
	}
	return nil
}

// madeUpWorktreeName names a worktree -w left unnamed.
func madeUpWorktreeName() string {
	b := make([]byte, 4)
	rand.Read(b)
	return "session-" + hex.EncodeToString(b)
}
