package sandbox

import (
	"errors"
	"fmt"
	"strings"
)

// Git's config files name what host git runs (hooks, fsmonitor, filter
// drivers, aliases) and the files it reads as configuration (includes,
// attributes, excludes). The parser below reads them as git's config.c
// does: sections, subsections, quoting, escapes and continuation lines;
// what it cannot read, git cannot either (git dies on a bad line), but the
// launcher refuses rather than guess.

// maxGitConfig bounds the size of one config file; git's own are a few
// kilobytes.
const maxGitConfig = 1 << 20

// maxGitInclude bounds include depth, as git does (MAX_INCLUDE_DEPTH).
const maxGitInclude = 10

// gitConfigEntry is one variable of a config file.
type gitConfigEntry struct {
	// Section and Key are lower-case; Subsection is as written (lower-case
	// in the old [section.subsection] form).
	Section, Subsection, Key string
	Value                    string
	// NoValue is a key without "=": boolean true.
	NoValue bool
	Line    int
	// Var is the variable's name as git prints it:
	// section.subsection.key.
	Var string
}

// errGitConfig is a line git cannot parse.
var errGitConfig = errors.New("bad config line")

// gitConfigReader is config.c's character source: CR LF reads as LF, and
// the end of the file as a final LF.
type gitConfigReader struct {
	b    []byte
	off  int
	line int
	eof  bool
}

func (r *gitConfigReader) next() byte {
	if r.off >= len(r.b) {
		if !r.eof {
			r.line++
		}
		r.eof = true
		return '\n'
	}
	c := r.b[r.off]
	r.off++
	if c == '\r' && r.off < len(r.b) && r.b[r.off] == '\n' {
		c = '\n'
		r.off++
	}
	if c == '\n' {
		r.line++
	}
	return c
}

func gitSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func gitAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func gitKeyChar(c byte) bool {
	return gitAlpha(c) || c >= '0' && c <= '9' || c == '-'
}
func gitLower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// parseGitConfig parses a config file.
func parseGitConfig(b []byte) ([]gitConfigEntry, error) {
	if len(b) > maxGitConfig {
		return nil, fmt.Errorf("larger than %d bytes", maxGitConfig)
	}
	r := &gitConfigReader{b: b, line: 1}
	if len(b) >= 3 && string(b[:3]) == "\xef\xbb\xbf" {
		r.off = 3
	}
	var out []gitConfigEntry
	var base []byte // "section" or "section.subsection"
	haveBase := false
	comment := false
	for {
		c := r.next()
		if c == '\n' {
			if r.eof {
				return out, nil
			}
			comment = false
			continue
		}
		if comment || gitSpace(c) {
			continue
		}
		if c == '#' || c == ';' {
			comment = true
			continue
		}
		line := r.line
		if c == '[' {
			var err error
			base, err = r.section()
			if err != nil || len(base) == 0 {
				return nil, fmt.Errorf("line %d: %w", line, errGitConfig)
			}
			haveBase = true
			continue
		}
		if !gitAlpha(c) {
			return nil, fmt.Errorf("line %d: %w", line, errGitConfig)
		}
		e, err := r.variable(c)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		e.Line, e.Var = line, e.Key
		if !haveBase {
			// Git keeps it, as a name without a section.
			out = append(out, e)
			continue
		}
		full := string(base) + "." + e.Key
		e.Var = full
		first, last := strings.IndexByte(full, '.'), strings.LastIndexByte(full, '.')
		e.Section, e.Key = full[:first], full[last+1:]
		if first < last {
			e.Subsection = full[first+1 : last]
		}
		out = append(out, e)
	}
}

// section reads a section header after its "[" (config.c get_base_var).
func (r *gitConfigReader) section() ([]byte, error) {
	var name []byte
	for {
		c := r.next()
		if r.eof {
			return nil, errGitConfig
		}
		switch {
		case c == ']':
			return name, nil
		case gitSpace(c):
			return r.subsection(name, c)
		case !gitKeyChar(c) && c != '.':
			return nil, errGitConfig
		}
		name = append(name, gitLower(c))
	}
}

// subsection reads ` "subsection"]` (config.c get_extended_base_var).
func (r *gitConfigReader) subsection(name []byte, c byte) ([]byte, error) {
	for gitSpace(c) {
		if c == '\n' {
			return nil, errGitConfig
		}
		c = r.next()
	}
	if c != '"' {
		return nil, errGitConfig
	}
	name = append(name, '.')
	for {
		c := r.next()
		if c == '\n' {
			return nil, errGitConfig
		}
		if c == '"' {
			break
		}
		if c == '\\' {
			if c = r.next(); c == '\n' {
				return nil, errGitConfig
			}
		}
		name = append(name, c)
	}
	if r.next() != ']' {
		return nil, errGitConfig
	}
	return name, nil
}

// variable reads "key [= value]" whose first letter is c (config.c
// get_value).
func (r *gitConfigReader) variable(c byte) (gitConfigEntry, error) {
	key := []byte{gitLower(c)}
	for {
		c = r.next()
		if r.eof || !gitKeyChar(c) {
			break
		}
		key = append(key, gitLower(c))
	}
	for c == ' ' || c == '\t' {
		c = r.next()
	}
	e := gitConfigEntry{Key: string(key)}
	if c == '\n' {
		e.NoValue = true
		return e, nil
	}
	if c != '=' {
		return e, errGitConfig
	}
	v, err := r.value()
	e.Value = v
	return e, err
}

// value reads a value to the end of its line (config.c parse_value):
// leading and trailing blanks dropped, quotes removed, \t \b \n \\ \"
// escaped, a backslash at the end of a line continuing it, # and ; outside
// quotes starting a comment.
func (r *gitConfigReader) value() (string, error) {
	var v []byte
	quoted, comment := false, false
	trim := -1
	for {
		c := r.next()
		if c == '\n' {
			if quoted {
				return "", errGitConfig
			}
			if trim >= 0 {
				v = v[:trim]
			}
			return string(v), nil
		}
		if comment {
			continue
		}
		if gitSpace(c) && !quoted {
			if trim < 0 {
				trim = len(v)
			}
			if len(v) > 0 {
				v = append(v, c)
			}
			continue
		}
		if !quoted && (c == ';' || c == '#') {
			comment = true
			continue
		}
		trim = -1
		switch c {
		case '\\':
			switch c = r.next(); c {
			case '\n':
				continue
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'n':
				c = '\n'
			case '\\', '"':
			default:
				return "", errGitConfig
			}
			v = append(v, c)
		case '"':
			quoted = !quoted
		default:
			v = append(v, c)
		}
	}
}

// gitNames returns the paths, as written, that entry e makes git read or
// run, and whether they are words of a shell command (git runs commands
// from the top of the work tree; a command's first word without a slash is
// looked up in PATH) rather than names of files or directories. include
// tells that e includes another config file.
func gitNames(e gitConfigEntry) (names []string, command, include bool) {
	if e.NoValue || e.Value == "" {
		return nil, false, false
	}
	v := e.Value
	sub := e.Subsection != ""
	switch e.Section + "." + e.Key {
	case "include.path", "includeif.path":
		return []string{v}, false, true
	case "core.hookspath", "core.attributesfile", "core.excludesfile":
		if !sub {
			return []string{v}, false, false
		}
	case "core.fsmonitor":
		if sub || gitBool(v) {
			return nil, false, false
		}
		return shellWords(v), true, false
	case "core.sshcommand", "core.editor", "core.pager", "core.askpass", "core.gitproxy",
		"core.alternaterefscommand", "sequence.editor", "diff.external", "interactive.difffilter",
		"uploadpack.packobjectshook", "sendemail.smtpserver", "web.browser":
		if !sub {
			return shellWords(v), true, false
		}
	case "init.templatedir":
		// git init and git clone copy its hooks into the new repository.
		if !sub {
			return []string{v}, false, false
		}
	case "sendemail.tocmd", "sendemail.cccmd", "sendemail.headercmd":
		// With or without an identity (sendemail.<identity>.tocmd).
		return shellWords(v), true, false
	case "guitool.cmd":
		if sub {
			return shellWords(v), true, false
		}
	case "submodule.update":
		if sub && strings.HasPrefix(v, "!") {
			return shellWords(v[1:]), true, false
		}
	case "lfs.path", "lfs.clean", "lfs.smudge":
		// lfs.customtransfer.<name>.path, lfs.extension.<name>.clean
		// and .smudge: programs git-lfs runs.
		if strings.HasPrefix(e.Subsection, "customtransfer.") && e.Key == "path" ||
			strings.HasPrefix(e.Subsection, "extension.") && e.Key != "path" {
			return shellWords(v), true, false
		}
	case "gpg.program", "credential.helper":
		return shellWords(strings.TrimPrefix(v, "!")), true, false
	case "gpg.defaultkeycommand":
		if e.Subsection == "ssh" {
			return shellWords(v), true, false
		}
	case "diff.textconv", "diff.command", "merge.driver", "filter.clean", "filter.smudge", "filter.process",
		"difftool.cmd", "mergetool.cmd", "mergetool.path", "difftool.path", "browser.cmd", "browser.path",
		"man.cmd", "man.path", "remote.uploadpack", "remote.receivepack":
		if sub {
			return shellWords(v), true, false
		}
	}
	switch {
	case e.Section == "alias" && strings.HasPrefix(v, "!"):
		return shellWords(v[1:]), true, false
	case e.Section == "pager" && !gitBool(v):
		return shellWords(v), true, false
	}
	return nil, false, false
}

// gitBool reports whether v is one of git's booleans.
func gitBool(v string) bool {
	switch strings.ToLower(v) {
	case "true", "false", "yes", "no", "on", "off", "1", "0":
		return true
	}
	return false
}

// shellWords splits a shell command into its words, roughly as sh would:
// quotes removed, a backslash escaping the next byte, operators and
// blanks separating; an option's value (--file=PATH) is a word too.
func shellWords(s string) []string {
	var words []string
	var w []byte
	in := false
	flush := func() {
		if in {
			word := string(w)
			if strings.HasPrefix(word, "-") {
				if _, v, ok := strings.Cut(word, "="); ok {
					word = v
				}
			}
			words = append(words, word)
		}
		w, in = w[:0], false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			w, in = append(w, s[i]), true
		case c == '\'' || c == '"':
			in = true
			for i++; i < len(s) && s[i] != c; i++ {
				if c == '"' && s[i] == '\\' && i+1 < len(s) {
					i++
				}
				w = append(w, s[i])
			}
		case strings.IndexByte(" \t\n;|&()<>`", c) >= 0:
			flush()
		default:
			w, in = append(w, c), true
		}
	}
	flush()
	return words
}
