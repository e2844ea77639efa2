package toolchain

import (
	"fmt"
	"strings"
)

// tomlKind is what a TOML value is, as far as the cargo settings care.
type tomlKind int

const (
	tomlOther  tomlKind = iota // a number, date, array, inline table, multi-line or escaped string
	tomlString                 // a one-line string without escapes but \" and \\
	tomlBool
)

// tomlEntry is one key = value of a TOML file, with its full dotted path
// (the table's keys, then the line's).
type tomlEntry struct {
	Path  []string
	Kind  tomlKind
	Value string // the string, or "true"/"false"
}

// parseTOML reads the subset of TOML a cargo configuration uses: [table]
// headers, key = "string" | 'string' | true | false lines, comments. Other
// values (numbers, arrays, inline tables, multi-line strings) are stepped
// over as tomlOther; the keys of [[array]] tables are left out. A line it
// cannot read is an error: the file is not used at all rather than read
// some other way than cargo reads it.
func parseTOML(data string) ([]tomlEntry, error) {
	var out []tomlEntry
	var table []string
	inArray := false
	lines := strings.Split(data, "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(strings.TrimSuffix(lines[i], "\r"))
		if line == "" || line[0] == '#' {
			continue
		}
		if strings.HasPrefix(line, "[[") {
			_, rest, err := tomlKey(line[2:], "]]")
			if err != nil || !tomlEnd(rest) {
				return nil, fmt.Errorf("line %d: not an array table header", i+1)
			}
			inArray = true
			continue
		}
		if line[0] == '[' {
			t, rest, err := tomlKey(line[1:], "]")
			if err != nil || !tomlEnd(rest) {
				return nil, fmt.Errorf("line %d: not a table header", i+1)
			}
			table, inArray = t, false
			continue
		}
		key, rest, err := tomlKey(line, "=")
		if err != nil {
			return nil, fmt.Errorf("line %d: not a key = value line", i+1)
		}
		e := tomlEntry{Path: append(append([]string(nil), table...), key...)}
		rest = strings.TrimSpace(rest)
		switch {
		case strings.HasPrefix(rest, `"""`), strings.HasPrefix(rest, "'''"):
			delim := rest[:3]
			body := rest[3:]
			for !strings.Contains(body, delim) {
				if i++; i == len(lines) {
					return nil, fmt.Errorf("line %d: multi-line string not closed", i)
				}
				body = lines[i]
			}
		case rest != "" && rest[0] == '"':
			v, tail, ok := tomlBasic(rest[1:])
			if !ok || !tomlEnd(tail) {
				return nil, fmt.Errorf("line %d: not a string", i+1)
			}
			e.Kind, e.Value = tomlString, v
			if v == unsetVar {
				e.Kind = tomlOther
			}
		case rest != "" && rest[0] == '\'':
			j := strings.IndexByte(rest[1:], '\'')
			if j < 0 || !tomlEnd(rest[j+2:]) {
				return nil, fmt.Errorf("line %d: not a string", i+1)
			}
			e.Kind, e.Value = tomlString, rest[1:j+1]
		case rest != "" && (rest[0] == '[' || rest[0] == '{'):
			n, err := tomlSkipNested(lines, &i, rest)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
		default:
			word, _, _ := strings.Cut(rest, "#")
			word = strings.TrimSpace(word)
			if word == "" || strings.ContainsAny(word, "\"'=[]{}") {
				return nil, fmt.Errorf("line %d: value not understood", i+1)
			}
			if word == "true" || word == "false" {
				e.Kind, e.Value = tomlBool, word
			}
		}
		if !inArray {
			out = append(out, e)
		}
	}
	return out, nil
}

// tomlKey reads a dotted key (bare, "basic" or 'literal' parts) up to end,
// and returns the parts and what follows end.
func tomlKey(s, end string) ([]string, string, error) {
	var parts []string
	for {
		s = strings.TrimLeft(s, " \t")
		var part string
		switch {
		case s == "":
			return nil, "", fmt.Errorf("key not ended")
		case s[0] == '"':
			v, tail, ok := tomlBasic(s[1:])
			if !ok {
				return nil, "", fmt.Errorf("bad quoted key")
			}
			part, s = v, tail
		case s[0] == '\'':
			j := strings.IndexByte(s[1:], '\'')
			if j < 0 {
				return nil, "", fmt.Errorf("bad quoted key")
			}
			part, s = s[1:j+1], s[j+2:]
		default:
			j := 0
			for j < len(s) && (s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9' || s[j] == '_' || s[j] == '-') {
				j++
			}
			if j == 0 {
				return nil, "", fmt.Errorf("bad key")
			}
			part, s = s[:j], s[j:]
		}
		parts = append(parts, part)
		s = strings.TrimLeft(s, " \t")
		switch {
		case strings.HasPrefix(s, "."):
			s = s[1:]
		case strings.HasPrefix(s, end):
			return parts, s[len(end):], nil
		default:
			return nil, "", fmt.Errorf("bad key")
		}
	}
}

// tomlBasic reads a basic string after its opening quote. Escapes other
// than \" and \\ make it unusable here: it is returned as unsetVar, which
// no setting takes.
func tomlBasic(s string) (v, tail string, ok bool) {
	var b strings.Builder
	odd := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			switch s[i] {
			case '"', '\\':
				b.WriteByte(s[i])
			default:
				odd = true
			}
		case c == '\\':
			return "", "", false
		case c == '"':
			if odd {
				return unsetVar, s[i+1:], true
			}
			return b.String(), s[i+1:], true
		default:
			b.WriteByte(c)
		}
	}
	return "", "", false
}

// tomlEnd reports whether s is empty but for spaces and a comment.
func tomlEnd(s string) bool {
	s = strings.TrimLeft(s, " \t")
	return s == "" || s[0] == '#'
}

// tomlSkipNested steps over an array or inline table that may span lines,
// counting brackets outside strings; it returns the line number of an
// error.
func tomlSkipNested(lines []string, i *int, rest string) (int, error) {
	depth := 0
	s := rest
	for {
		inStr := byte(0)
		for j := 0; j < len(s); j++ {
			c := s[j]
			switch {
			case inStr == '"' && c == '\\':
				j++
			case inStr != 0:
				if c == inStr {
					inStr = 0
				}
			case c == '"' || c == '\'':
				if strings.HasPrefix(s[j:], `"""`) || strings.HasPrefix(s[j:], "'''") {
					return *i + 1, fmt.Errorf("multi-line string in an array")
				}
				inStr = c
			case c == '#':
				j = len(s)
			case c == '[' || c == '{':
				depth++
			case c == ']' || c == '}':
				depth--
				if depth == 0 {
					if !tomlEnd(s[j+1:]) {
						return *i + 1, fmt.Errorf("text after a value")
					}
					return 0, nil
				}
			}
		}
		if inStr != 0 {
			return *i + 1, fmt.Errorf("string not closed")
		}
		if *i++; *i == len(lines) {
			return *i, fmt.Errorf("array or table not closed")
		}
		s = lines[*i]
	}
}
