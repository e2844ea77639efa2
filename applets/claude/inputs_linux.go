package claude

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/claude-sandbox/claude-sandbox/internal/hostpath"
	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/sandboxcfg"
	"github.com/claude-sandbox/claude-sandbox/internal/seccomp"
)

// inputs is what the launcher reads before deciding: who runs it, where,
// and the config.
type inputs struct {
	uid            int
	home, userName string
	k              knobs
	// pwd is the physical working directory ("" if unknown).
	pwd string
	// cfg is the config file's walk, nil if there is none; the caller
	// closes it.
	cfg        *hostpath.Resolved
	directives []sandboxcfg.Directive
}

// readInputs reads the user's identity, the knobs, the working directory
// and the config file.
func readInputs() (inputs, error) {
	var in inputs
	uid := os.Getuid()
	home, userName, err := identity(uid)
	if err != nil {
		return in, err
	}
	k, err := readKnobs(os.Getenv, home, uid)
	if err != nil {
		return in, err
	}
	// The physical working directory (getcwd(2)), not $PWD: a symlink
	// the agent planted inside a project must not steer `pwd-under`.
	pwd, _ := syscall.Getwd()
	in = inputs{uid: uid, home: home, userName: userName, k: k, pwd: pwd}

	cfg, src, err := loadConfig(filepath.Join(home, ".claude-sandbox-init"), uid)
	if err == nil {
		in.cfg = cfg
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return in, &multicall.ExitError{Code: multicall.ExitUsage, Err: err}
	default:
		in.directives, err = sandboxcfg.Parse(src, sandboxcfg.Options{
			Name:         configName,
			Vars:         sandboxcfg.Vars{Home: home, Pwd: pwd, User: userName},
			KnownSyscall: seccomp.Known,
		})
		if err != nil {
			return in, &multicall.ExitError{Code: multicall.ExitUsage, Err: err}
		}
	}
	return in, nil
}

// identity returns the user's home ($HOME, else the passwd entry) and name
// ($USER, else the passwd entry).
func identity(uid int) (home, name string, err error) {
	home, name = os.Getenv("HOME"), os.Getenv("USER")
	if filepath.IsAbs(home) && name != "" {
		return filepath.Clean(home), name, nil
	}
	u, lerr := user.LookupId(strconv.Itoa(uid))
	if !filepath.IsAbs(home) {
		if lerr != nil || !filepath.IsAbs(u.HomeDir) {
			return "", "", fmt.Errorf("cannot find your home directory: set HOME")
		}
		home = u.HomeDir
	}
	if name == "" && lerr == nil {
		name = u.Username
	}
	return filepath.Clean(home), name, nil
}
