package claude

import "os"

// readFile reads a file for bwrap.CheckAppArmor (a sysctl, the installed
// AppArmor profile).
func readFile(p string) (string, error) {
	b, err := os.ReadFile(p)
	return string(b), err
}
