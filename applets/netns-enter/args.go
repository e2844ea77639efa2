package netnsenter

import (
	"errors"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/nsname"
)

const usage = "usage: netns-enter [--netns=]NAME -- CMD [ARGS...]"

// request is what the command line asks for.
type request struct {
	Name string   // namespace name, valid per nsname
	Argv []string // command and its arguments, Argv[0] != ""
}

var errHelp = errors.New("help")

// parseArgs parses exactly "[--netns=]NAME -- CMD [ARGS...]". It is pure:
// the name is checked before any file is touched. A lone -h or --help
// returns errHelp; every other problem is a usage error (exit 2).
func parseArgs(args []string) (request, error) {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		return request{}, errHelp
	}
	if len(args) == 0 {
		return request{}, multicall.Usagef("missing NAME: %s", usage)
	}
	name, opt := strings.CutPrefix(args[0], "--netns=")
	if !opt && strings.HasPrefix(name, "-") {
		if name == "--" {
			return request{}, multicall.Usagef("missing NAME: %s", usage)
		}
		return request{}, multicall.Usagef("unknown option %q: %s", name, usage)
	}
	if err := nsname.Check(name); err != nil {
		return request{}, &multicall.ExitError{Code: multicall.ExitUsage, Err: err}
	}
	if len(args) < 2 || args[1] != "--" {
		return request{}, multicall.Usagef("missing -- after NAME: %s", usage)
	}
	if len(args) < 3 {
		return request{}, multicall.Usagef("missing CMD after --: %s", usage)
	}
	if args[2] == "" {
		return request{}, multicall.Usagef("empty CMD: %s", usage)
	}
	return request{Name: name, Argv: args[2:]}, nil
}
