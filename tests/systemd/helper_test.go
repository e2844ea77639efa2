package systemd

import (
	"fmt"
	"os"
)

// helper runs the test binary as a helper process named mode.
func helper(mode string, args []string) {
	fmt.Fprintf(os.Stderr, "unknown helper %q\n", mode)
	os.Exit(2)
}
