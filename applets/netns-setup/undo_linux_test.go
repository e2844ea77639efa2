package netnssetup

import (
	"errors"
	"slices"
	"testing"
)

func TestUndoStack(t *testing.T) {
	var order []string
	step := func(name string, fail error) func() error {
		return func() error { order = append(order, name); return fail }
	}
	busy := errors.New("device or resource busy")

	var u undoStack
	u.push("firewall table", step("table", nil))
	u.push("namespace agents", step("netns", busy))
	u.push("veth netns-agents", step("veth", nil))

	err := errors.New("add address: file exists")
	u.run(&err)
	if want := []string{"veth", "netns", "table"}; !slices.Equal(order, want) {
		t.Errorf("undo order = %v, want %v", order, want)
	}
	if !errors.Is(err, busy) {
		t.Errorf("undo error %v does not carry the failed step's error", err)
	}
	want := "add address: file exists\nundo: namespace agents: device or resource busy (remove it by hand)"
	if err.Error() != want {
		t.Errorf("run(err) = %q, want %q", err, want)
	}

	order = nil
	var ok error
	u.run(&ok)
	if ok != nil || len(order) != 0 {
		t.Errorf("run(nil) ran %v, err %v; want nothing", order, ok)
	}
}

// TestUndoDeferred: "defer undo.run(&err)" before any push, as up does,
// still takes back the steps pushed after it.
func TestUndoDeferred(t *testing.T) {
	ran := false
	err := func() (err error) {
		var undo undoStack
		defer undo.run(&err)
		undo.push("step", func() error { ran = true; return nil })
		return errors.New("failed")
	}()
	if !ran || err == nil || err.Error() != "failed" {
		t.Errorf("after a failed run: step ran = %v, err = %v; want true, failed", ran, err)
	}
}
