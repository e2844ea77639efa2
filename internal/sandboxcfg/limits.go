package sandboxcfg

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Kinds of the limit directive and of the admin's ceiling file.
const (
	LimitMemory = "memory" // bytes of memory, the scope's MemoryMax
	LimitTasks  = "tasks"  // processes and threads, the scope's TasksMax
	LimitCPU    = "cpu"    // percent of one CPU, the scope's CPUQuota
	LimitTmp    = "tmp"    // bytes of the tmpfs at /tmp
)

// LimitKinds lists the kinds in the order messages show them.
var LimitKinds = []string{LimitMemory, LimitTasks, LimitCPU, LimitTmp}

// Values of the budget directive.
const (
	BudgetRequired = "required" // without a systemd user manager, limits refuse the start
	BudgetOptional = "optional" // without one, the sandbox starts without its limits
)

// Bounds of the values, so that every accepted value is one systemd and
// the kernel take as written.
const (
	minBytes = 1 << 20 // 1M
	maxBytes = 1 << 50 // 1P
	maxTasks = 1 << 22 // the kernel's pid_max limit
	maxCPU   = 100000  // percent: a thousand CPUs
)

// ParseLimit parses VALUE of `limit KIND VALUE`: for memory and tmp a size
// in bytes with an optional K, M, G or T suffix (powers of 1024); for
// tasks a count; for cpu a percentage of one CPU (200% is two CPUs).
func ParseLimit(kind, value string) (uint64, error) {
	switch kind {
	case LimitMemory, LimitTmp:
		return parseSize(value)
	case LimitTasks:
		n, err := strconv.ParseUint(value, 10, 64)
		if err != nil || n == 0 || n > maxTasks {
			return 0, fmt.Errorf("%q: want a count of processes from 1 to %d", value, maxTasks)
		}
		return n, nil
	case LimitCPU:
		v, ok := strings.CutSuffix(value, "%")
		n, err := strconv.ParseUint(v, 10, 64)
		if !ok || err != nil || n == 0 || n > maxCPU {
			return 0, fmt.Errorf("%q: want a percentage of one CPU from 1%% to %d%% (200%% is two CPUs)", value, maxCPU)
		}
		return n, nil
	}
	return 0, fmt.Errorf("unknown limit %q: want memory, tasks, cpu or tmp", kind)
}

func parseSize(value string) (uint64, error) {
	bad := fmt.Errorf("%q: want a size from 1M to 1024T, in bytes or with a K, M, G or T suffix (8G)", value)
	v, mult := value, uint64(1)
	if n := len(v); n > 0 {
		switch v[n-1] {
		case 'K', 'k':
			mult = 1 << 10
		case 'M', 'm':
			mult = 1 << 20
		case 'G', 'g':
			mult = 1 << 30
		case 'T', 't':
			mult = 1 << 40
		}
		if mult > 1 {
			v = v[:n-1]
		}
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n > maxBytes/mult || n*mult < minBytes {
		return 0, bad
	}
	return n * mult, nil
}

// FormatLimit shows a value of kind as a user would write it.
func FormatLimit(kind string, n uint64) string {
	switch kind {
	case LimitMemory, LimitTmp:
		for _, u := range []struct {
			s string
			m uint64
		}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
			if n >= u.m && n%u.m == 0 {
				return strconv.FormatUint(n/u.m, 10) + u.s
			}
		}
	case LimitCPU:
		return strconv.FormatUint(n, 10) + "%"
	}
	return strconv.FormatUint(n, 10)
}

// Ceiling is the admin's upper bound on each limit kind; a kind that is
// missing has none.
type Ceiling map[string]uint64

// ParseCeiling parses the admin's ceiling file: one `KIND VALUE` a line
// (KIND memory, tasks, cpu or tmp, VALUE as in the limit directive), #
// comments and blank lines ignored, each kind at most once. The error,
// if any, is an *Error naming the file as name.
func ParseCeiling(src []byte, name string) (Ceiling, error) {
	if len(src) > MaxSize {
		return nil, &Error{name, 1, fmt.Sprintf("file is larger than %d bytes", MaxSize)}
	}
	c := Ceiling{}
	for i, line := range strings.Split(string(src), "\n") {
		if j := strings.IndexByte(line, '#'); j >= 0 {
			line = line[:j]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		fail := func(err error) error { return &Error{name, i + 1, err.Error()} }
		if len(f) != 2 {
			return nil, fail(errors.New("want KIND VALUE, e.g. memory 16G"))
		}
		if _, dup := c[f[0]]; dup {
			return nil, fail(fmt.Errorf("%s is set twice", f[0]))
		}
		n, err := ParseLimit(f[0], f[1])
		if err != nil {
			return nil, fail(err)
		}
		c[f[0]] = n
	}
	return c, nil
}
