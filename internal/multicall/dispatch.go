package multicall

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
)

// PrivilegedApplet is the only applet that runs when the process has
// elevated credentials.
const PrivilegedApplet = "netns-enter"

// Table maps applet names to applets.
type Table map[string]Applet

// NewTable builds a table and panics on a duplicate or empty name.
func NewTable(applets ...Applet) Table {
	t := make(Table)
	for _, a := range applets {
		if a.Name == "" || a.Run == nil {
			panic("multicall: applet without name or Run")
		}
		if _, dup := t[a.Name]; dup {
			panic("multicall: duplicate applet " + a.Name)
		}
		t[a.Name] = a
	}
	return t
}

// Names returns the applet names, sorted.
func (t Table) Names() []string {
	names := make([]string, 0, len(t))
	for n := range t {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Select returns the applet to run and its arguments (without the applet
// name). privileged says whether the process runs with elevated credentials:
// then argv[0] is the setuid caller's choice and only PrivilegedApplet may
// run. name is the applet name for messages; it is "" when none was found.
func (t Table) Select(argv []string, privileged bool) (a Applet, args []string, name string, err error) {
	if len(argv) == 0 {
		argv = []string{""}
	}
	if privileged {
		a, ok := t[PrivilegedApplet]
		if !ok {
			return Applet{}, nil, "", Usagef("running with elevated privileges, but this build has no %s applet", PrivilegedApplet)
		}
		return a, argv[1:], PrivilegedApplet, nil
	}
	base := filepath.Base(argv[0])
	if a, ok := t[base]; ok {
		return a, argv[1:], base, nil
	}
	if len(argv) > 1 {
		if argv[1] == "--list" {
			return Applet{}, nil, "", errList
		}
		if a, ok := t[argv[1]]; ok {
			return a, argv[2:], argv[1], nil
		}
		return Applet{}, nil, "", Usagef("unknown applet %q; applets: %s", argv[1], strings.Join(t.Names(), ", "))
	}
	return Applet{}, nil, "", Usagef("no applet named; run as one of: %s", strings.Join(t.Names(), ", "))
}

var errList = fmt.Errorf("list")

// Main runs the multicall program and returns the exit code. Only it prints
// errors, once, prefixed by the applet name.
func Main(ctx context.Context, t Table, argv []string, stdio Stdio) int {
	a, args, name, err := t.Select(argv, Privileged())
	if err == errList {
		for _, n := range t.Names() {
			fmt.Fprintln(stdio.Out, n)
		}
		return ExitOK
	}
	if err != nil {
		report(stdio.Err, progName(argv), err)
		return Code(err)
	}
	err = a.Run(ctx, args, stdio)
	report(stdio.Err, name, err)
	return Code(err)
}

func progName(argv []string) string {
	if len(argv) == 0 || argv[0] == "" {
		return "multicall"
	}
	return filepath.Base(argv[0])
}

func report(w io.Writer, name string, err error) {
	if msg := Message(err); msg != "" {
		fmt.Fprintf(w, "%s: %s\n", name, msg)
	}
}
