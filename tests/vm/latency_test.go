//go:build linux

package vm

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"
)

// helperEnv=latency makes the test binary a latency probe: it starts
// /bin/true as often as its argument says and prints the median time in
// nanoseconds.
const helperEnv = "CLAUDE_SBX_VM_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "latency" {
		n, _ := strconv.Atoi(os.Args[1])
		var d []time.Duration
		for range n {
			t := time.Now()
			if err := exec.Command("/bin/true").Run(); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			d = append(d, time.Since(t))
			time.Sleep(20 * time.Millisecond)
		}
		slices.Sort(d)
		fmt.Println(int64(d[len(d)/2]))
		os.Exit(0)
	}
	os.Exit(m.Run())
}
