package nspawn

import (
	"os"
	"os/exec"
	"slices"
	"testing"
)

func TestChildren(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	for _, tt := range []struct {
		name string
		fn   func(int) []int
	}{
		{"children", children},
		{"childrenFromStat", childrenFromStat},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.fn(os.Getpid()); !slices.Contains(got, cmd.Process.Pid) {
				t.Errorf("%s(%d) = %v, want it to contain %d", tt.name, os.Getpid(), got, cmd.Process.Pid)
			}
			if got := tt.fn(cmd.Process.Pid); len(got) != 0 {
				t.Errorf("%s(sleep) = %v, want none", tt.name, got)
			}
		})
	}
}
