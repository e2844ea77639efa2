package sandbox

import "path"

// UserManagerSocket is the private socket of the user's systemd manager
// under runtimeDir ($XDG_RUNTIME_DIR), which systemd-run --user uses when
// the session bus is kept out of the chain.
func UserManagerSocket(runtimeDir string) string {
	return path.Join(runtimeDir, "systemd", "private")
}
