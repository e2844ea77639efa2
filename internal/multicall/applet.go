// Package multicall is the applet framework of the one binary: the applet
// contract (signature, standard streams, errors that carry an exit code)
// and the dispatcher that picks the applet from the name it was run as.
//
// It imports the standard library and golang.org/x/sys/unix only, because it
// runs first in the setuid netns-enter binary. The kong adapter for the
// applets that are not setuid lives beneath it, in kongparse.
package multicall

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// Stdio are the streams an applet reads and writes.
type Stdio struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// Applet is one program of the multicall binary.
type Applet struct {
	// Name is the name the applet is installed and invoked as.
	Name string
	// Run runs the applet. args excludes the program name.
	Run func(ctx context.Context, args []string, stdio Stdio) error
}

// Exit codes shared by all applets.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// ExitError asks the dispatcher to exit with Code. If Err is nil nothing is
// printed (the applet already reported, or it passes on a child's status).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Usagef returns an error that exits with ExitUsage.
func Usagef(format string, args ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// Exit returns an error that makes the dispatcher exit with code and print
// nothing.
func Exit(code int) error {
	return &ExitError{Code: code}
}

// Code returns the exit code for err: 0 for nil, the code of an ExitError,
// ExitFailure otherwise.
func Code(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return ExitFailure
}

// Message returns the line to print for err, or "" if nothing should be
// printed.
func Message(err error) string {
	if err == nil {
		return ""
	}
	var ee *ExitError
	if errors.As(err, &ee) && ee.Err == nil {
		return ""
	}
	return err.Error()
}
