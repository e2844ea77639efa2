package netnsenter

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/nsname"
)

// entry is one whitelist line: NAME, or NAME @GROUP.
type entry struct {
	Name  string
	Group string // "" when any user may enter
	Line  int
}

// parseWhitelist parses the whitelist: one namespace name per line,
// optionally followed by " @GROUP"; blanks and tabs separate fields; "#"
// starts a comment; blank lines are skipped. Any malformed or duplicate
// line makes the whole file invalid (fail closed): the error names the line
// as "LINE: problem".
func parseWhitelist(data []byte) ([]entry, error) {
	var entries []entry
	seen := make(map[string]int)
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		if c := strings.IndexByte(line, '#'); c >= 0 {
			line = line[:c]
		}
		fields := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' })
		if len(fields) == 0 {
			continue
		}
		if len(fields) > 2 {
			return nil, fmt.Errorf("%d: want NAME or NAME @GROUP, got %d fields", n, len(fields))
		}
		if err := nsname.Check(fields[0]); err != nil {
			return nil, fmt.Errorf("%d: %w", n, err)
		}
		e := entry{Name: fields[0], Line: n}
		if len(fields) == 2 {
			g, ok := strings.CutPrefix(fields[1], "@")
			if !ok || !validGroupName(g) {
				return nil, fmt.Errorf("%d: %q is not @GROUP (a group name from /etc/group)", n, fields[1])
			}
			e.Group = g
		}
		if first, dup := seen[e.Name]; dup {
			return nil, fmt.Errorf("%d: %s is already listed on line %d", n, e.Name, first)
		}
		seen[e.Name] = n
		entries = append(entries, e)
	}
	return entries, nil
}

// find returns the entry for name.
func find(entries []entry, name string) (entry, bool) {
	for _, e := range entries {
		if e.Name == name {
			return e, true
		}
	}
	return entry{}, false
}

// validGroupName accepts the portable POSIX user and group name set
// (letters, digits, '.', '_', '-', not starting with '-'), up to 32 bytes,
// with the trailing '$' that Samba machine accounts use.
func validGroupName(g string) bool {
	g = strings.TrimSuffix(g, "$")
	if g == "" || len(g) > 32 || g[0] == '-' {
		return false
	}
	for i := 0; i < len(g); i++ {
		c := g[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

var errNoGroup = errors.New("no such group")

// lookupGroup returns the gid of group name in an /etc/group file, from its
// first line with that name (as getgrnam does with the "files" source).
func lookupGroup(data []byte, name string) (uint32, error) {
	for i, line := range strings.Split(string(data), "\n") {
		f := strings.Split(line, ":")
		if len(f) != 4 || f[0] != name {
			continue
		}
		gid, err := strconv.ParseUint(f[2], 10, 32)
		if err != nil || gid == 1<<32-1 {
			return 0, fmt.Errorf("%d: group %s has an invalid gid %q", i+1, name, f[2])
		}
		return uint32(gid), nil
	}
	return 0, errNoGroup
}

// member reports whether gid is the real gid or one of the supplementary
// groups.
func member(gid, rgid uint32, groups []uint32) bool {
	if gid == rgid {
		return true
	}
	for _, g := range groups {
		if g == gid {
			return true
		}
	}
	return false
}
