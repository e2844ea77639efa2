package netnssetup

import (
	"errors"
	"fmt"
)

// undoStack holds the steps that take back what a failed run made, newest
// last.
type undoStack []undoStep

type undoStep struct {
	what string
	fn   func() error
}

// push records fn, which takes back what; what names it in errors.
func (u *undoStack) push(what string, fn func() error) {
	*u = append(*u, undoStep{what, fn})
}

// run takes back every step, newest first, when *err is not nil, and joins
// the errors of steps that fail into *err: a caller then learns what a
// failed run left behind. The receiver is a pointer: "defer undo.run(&err)"
// must see the steps pushed after the defer statement.
func (u *undoStack) run(err *error) {
	if *err == nil {
		return
	}
	for i := len(*u) - 1; i >= 0; i-- {
		if e := (*u)[i].fn(); e != nil {
			*err = errors.Join(*err, fmt.Errorf("undo: %s: %w (remove it by hand)", (*u)[i].what, e))
		}
	}
}
