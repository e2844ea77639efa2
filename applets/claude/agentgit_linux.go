package claude

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ensureAgentGit makes the directory of the agent's own repository (git
// commit in the config) and its parent, each 0700 and the user's, or
// checks the existing ones. The parent is in no mount of the sandbox, so
// the agent cannot swap either for a link.
func ensureAgentGit(path string, uid int) error {
	for _, d := range []string{filepath.Dir(path), path} {
		if err := ownDir(d, uid); err != nil {
			return fmt.Errorf("agent's git repository: %w", err)
		}
	}
	return nil
}

func fileOwner(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// gitFixed are the first releases of each series in which git upload-pack
// no longer fetches missing objects of a partial clone by itself
// (CVE-2024-32004): before them, fetching from the agent's repository ran
// the commands its promisor remote names.
var gitFixed = [][3]int{{2, 39, 4}, {2, 40, 2}, {2, 41, 1}, {2, 42, 2}, {2, 43, 4}, {2, 44, 1}, {2, 45, 1}}

// gitSafeToFetch reports whether `git --version` output names a release
// that is safe to fetch from an untrusted repository with.
func gitSafeToFetch(version string) bool {
	f := strings.Fields(version)
	if len(f) < 3 || f[0] != "git" || f[1] != "version" {
		return false
	}
	parts := strings.SplitN(f[2], ".", 4)
	if len(parts) < 3 {
		return false
	}
	var v [3]int
	for i, s := range parts[:3] {
		n, err := strconv.Atoi(s)
		if err != nil {
			return false
		}
		v[i] = n
	}
	last := gitFixed[len(gitFixed)-1]
	if v[0] != last[0] {
		return v[0] > last[0]
	}
	if v[1] > last[1] {
		return true
	}
	for _, fx := range gitFixed {
		if v[1] == fx[1] {
			return v[2] >= fx[2]
		}
	}
	return false
}

// checkHostGit refuses git commit when the host's git would run what the
// agent's repository configures while the user fetches from it.
func checkHostGit() error {
	path, err := exec.LookPath("git")
	if err != nil {
		return fmt.Errorf("git commit: git is not installed here, and you would fetch the agent's work with it: install git or remove `git commit` from %s", configName)
	}
	// In /, without what steers the loader (hostEnv): the launcher's
	// directory is the project, which the sandbox writes.
	cmd := exec.Command(path, "--version")
	cmd.Dir, cmd.Env = "/", hostEnv(os.Environ())
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("git commit: %s --version: %w", path, err)
	}
	if v := strings.TrimSpace(string(out)); !gitSafeToFetch(v) {
		return fmt.Errorf("git commit: %s is %s: fetching from the agent's repository is safe only with git 2.39.4, 2.40.2, 2.41.1, 2.42.2, 2.43.4, 2.44.1, 2.45.1 or newer: upgrade git or remove `git commit` from %s", path, v, configName)
	}
	return nil
}
