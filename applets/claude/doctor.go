package claude

import (
	"fmt"
	"os"
	"syscall"
)

// runDoctor runs the doctor applet of this same binary (claude
// --sandbox-doctor ARGS is claude-sandbox doctor ARGS): applets do not
// import each other, so it executes itself under the applet's name.
func runDoctor(args []string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("--sandbox-doctor: cannot find this program: %w", err)
	}
	err = syscall.Exec(self, append([]string{"doctor"}, args...), os.Environ())
	return fmt.Errorf("--sandbox-doctor: exec %s: %w", self, err)
}
