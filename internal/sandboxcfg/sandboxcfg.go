// Package sandboxcfg parses ~/.claude-sandbox-init, the user's additions to
// the sandbox: one directive per line, in order, later mounts shadowing
// earlier ones as in bwrap.
//
// The syntax is that of a firejail profile with shell quoting:
//
//	# comment
//	rw ~/.opam                      # bind read-write at the same path
//	ro /var/lib/pacman /mnt/pacman  # bind read-only at another path
//	setenv EDITOR "vim -u NONE"
//	limit memory 8G                 # the sandbox's budget (memory, tasks, cpu, tmp)
//	if pwd-under ~/work
//	    project ro                  # the project of the working directory, read-only
//	end
//
// Words are split on blanks. 'single quotes' keep everything literally;
// "double quotes" expand variables and take \" \\ \$ as escapes; outside
// quotes a backslash escapes the next character. A word that starts with
// an unquoted # begins a comment. ~ at the start of an unquoted word is the
// home directory; $HOME, $PWD, $USER (or ${HOME} ...) expand anywhere but in
// single quotes; no other variable expands, so a stray $ is an error rather
// than a surprise. Parsing reads nothing but its input: whether paths exist
// is for the caller to check.
package sandboxcfg

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Directive names.
const (
	RO           = "ro"            // ro SRC [DEST]: read-only bind
	ROTry        = "ro-try"        // as ro, skipped when SRC is missing
	RW           = "rw"            // rw SRC [DEST]: read-write bind
	RWTry        = "rw-try"        // as rw, skipped when SRC is missing
	Dev          = "dev"           // dev SRC [DEST]: bind allowing device access
	DevTry       = "dev-try"       // as dev, skipped when SRC is missing
	Tmpfs        = "tmpfs"         // tmpfs DIR: an empty tmpfs (hides what is below)
	Dir          = "dir"           // dir DIR: an empty directory
	Symlink      = "symlink"       // symlink TARGET LINK
	Setenv       = "setenv"        // setenv NAME VALUE
	Unsetenv     = "unsetenv"      // unsetenv NAME...
	Keepenv      = "keepenv"       // keepenv NAME...: pass a token variable the launcher removes by default
	Chdir        = "chdir"         // chdir DIR: start there instead of ~
	Command      = "command"       // command PATH [ARGS...]: run this instead of the agent
	Bwrap        = "bwrap"         // bwrap ARGS...: raw bwrap arguments
	SeccompAllow = "seccomp-allow" // seccomp-allow SYSCALL...
	SeccompDeny  = "seccomp-deny"  // seccomp-deny SYSCALL...
	Project      = "project"       // project off|ro|rw: how the working directory's project is bound
	Git          = "git"           // git read-only|commit: whether the agent can commit in the project
	GitPush      = "git push"      // git push REMOTE [PATTERN...] [ci:PATH...] [ci]: the agent's pushes the launcher makes (the line is `git push ...`)
	Network      = "network"       // network host|namespace: the host's network, or the namespace (default)
	Home         = "home"          // home project|shared: a sandbox home per project (default), or one for all
	Toolchains   = "toolchains"    // toolchains auto|off|DIR...: the toolchains shown read-only, from PATH (auto) and DIRs
	Cache        = "cache"         // cache project|shared: download caches per project home (default), or shared by every project
	Limit        = "limit"         // limit memory|tasks|cpu|tmp VALUE: the sandbox's budget
	Budget       = "budget"        // budget required|optional: whether limits need a systemd user manager
)

// Values of the cache directive.
const (
	CacheProject = "project"
	CacheShared  = "shared"
)

// Values of the home directive.
const (
	HomeProject = "project"
	HomeShared  = "shared"
)

// Values of the toolchains directive besides directories.
const (
	ToolchainsAuto = "auto"
	ToolchainsOff  = "off"
)

// Values of the git directive.
const (
	GitReadOnly = "read-only"
	GitCommit   = "commit"
	// GitPushCI, last on a git push line, lets pushes change CI
	// definitions.
	GitPushCI = "ci"
	// GitPushCIPath starts a git push token that names one more CI
	// definition (ci:PATH, relative to the repository's top).
	GitPushCIPath = "ci:"
	// GitPushDefault is the pattern of branches a git push line without
	// patterns allows.
	GitPushDefault = "agent/*"
)

// Values of the project directive.
const (
	ProjectOff = "off"
	ProjectRO  = "ro"
	ProjectRW  = "rw"
)

// Condition names for `if`.
const (
	PwdUnder = "pwd-under" // the working directory is strictly below DIR
	Exists   = "exists"    // PATH exists on the host
)

// Cond is one condition of an if block.
type Cond struct {
	Not  bool
	Name string // PwdUnder or Exists
	Path string
	Line int
}

// Directive is one line of the file with its words expanded.
type Directive struct {
	Line int
	Name string
	Args []string
	// When holds the conditions of the enclosing if blocks, outermost
	// first; the directive applies only if all hold.
	When []Cond
}

// Vars are the values variables expand to.
type Vars struct {
	Home string // ~ and $HOME
	Pwd  string // $PWD
	User string // $USER
}

// Options configure Parse.
type Options struct {
	// Name is the file name used in messages, e.g. "~/.claude-sandbox-init".
	Name string
	Vars Vars
	// KnownSyscall reports whether a syscall name may be allowed or denied.
	// Nil accepts any well-formed name.
	KnownSyscall func(string) bool
}

// Error is a problem at a line of the file.
type Error struct {
	Name string
	Line int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d: %s", e.Name, e.Line, e.Msg) }

// MaxSize is the largest file Parse accepts.
const MaxSize = 1 << 20

// Parse parses the file src. The error, if any, is an *Error.
func Parse(src []byte, o Options) ([]Directive, error) {
	if o.Name == "" {
		o.Name = "config"
	}
	if len(src) > MaxSize {
		return nil, &Error{o.Name, 1, fmt.Sprintf("file is larger than %d bytes", MaxSize)}
	}
	var (
		out   []Directive
		conds []Cond
	)
	for i, line := range strings.Split(string(src), "\n") {
		n := i + 1
		fail := func(format string, args ...any) error {
			return &Error{o.Name, n, fmt.Sprintf(format, args...)}
		}
		words, err := split(line, o.Vars)
		if err != nil {
			return nil, fail("%v", err)
		}
		if len(words) == 0 {
			continue
		}
		name, args := words[0], words[1:]
		switch name {
		case "if":
			c, err := parseCond(args)
			if err != nil {
				return nil, fail("if: %v", err)
			}
			c.Line = n
			conds = append(conds, c)
			continue
		case "end":
			if len(args) != 0 {
				return nil, fail("end takes no arguments")
			}
			if len(conds) == 0 {
				return nil, fail("end without if")
			}
			conds = conds[:len(conds)-1]
			continue
		}
		if name == Git && len(args) > 0 && args[0] == "push" {
			name, args = GitPush, args[1:]
		}
		if err := check(name, args, o.KnownSyscall); err != nil {
			return nil, fail("%v", err)
		}
		if isPathDirective(name) || name == Toolchains {
			for j, a := range args {
				if name == Symlink && j == 0 {
					continue // the target may be relative
				}
				if name == Command && j > 0 {
					continue
				}
				if name == Toolchains && (a == ToolchainsAuto || a == ToolchainsOff) {
					continue
				}
				args[j] = filepath.Clean(a)
			}
		}
		out = append(out, Directive{Line: n, Name: name, Args: args, When: append([]Cond(nil), conds...)})
	}
	if len(conds) > 0 {
		return nil, &Error{o.Name, conds[len(conds)-1].Line, "if without end"}
	}
	return out, nil
}

func isPathDirective(name string) bool {
	switch name {
	case RO, ROTry, RW, RWTry, Dev, DevTry, Tmpfs, Dir, Symlink, Chdir, Command:
		return true
	}
	return false
}

func parseCond(args []string) (Cond, error) {
	var c Cond
	if len(args) > 0 && args[0] == "not" {
		c.Not = true
		args = args[1:]
	}
	if len(args) == 0 {
		return c, errors.New("missing condition: want pwd-under DIR or exists PATH")
	}
	switch args[0] {
	case PwdUnder, Exists:
	default:
		return c, fmt.Errorf("unknown condition %q: want pwd-under DIR or exists PATH", args[0])
	}
	c.Name = args[0]
	if len(args) != 2 {
		return c, fmt.Errorf("%s takes one path", c.Name)
	}
	if err := checkPath(args[1]); err != nil {
		return c, fmt.Errorf("%s: %v", c.Name, err)
	}
	c.Path = filepath.Clean(args[1])
	return c, nil
}

// check validates the arguments of one directive.
func check(name string, args []string, known func(string) bool) error {
	nargs := func(min, max int, usage string) error {
		if len(args) < min {
			return fmt.Errorf("%s: missing argument: want %s %s", name, name, usage)
		}
		if max >= 0 && len(args) > max {
			return fmt.Errorf("%s: too many arguments: want %s %s", name, name, usage)
		}
		return nil
	}
	paths := func(ps []string) error {
		for _, p := range ps {
			if err := checkPath(p); err != nil {
				return fmt.Errorf("%s: %v", name, err)
			}
		}
		return nil
	}
	switch name {
	case RO, ROTry, RW, RWTry, Dev, DevTry:
		if err := nargs(1, 2, "SRC [DEST]"); err != nil {
			return err
		}
		return paths(args)
	case Tmpfs, Dir, Chdir:
		if err := nargs(1, 1, "DIR"); err != nil {
			return err
		}
		return paths(args)
	case Symlink:
		if err := nargs(2, 2, "TARGET LINK"); err != nil {
			return err
		}
		if err := checkText(args[0]); err != nil || args[0] == "" {
			if err == nil {
				err = errors.New("empty target")
			}
			return fmt.Errorf("%s: %v", name, err)
		}
		return paths(args[1:])
	case Setenv:
		if err := nargs(2, 2, `NAME VALUE (quote a VALUE with blanks: "a b")`); err != nil {
			return err
		}
		if err := checkEnvName(args[0]); err != nil {
			return fmt.Errorf("%s: %v", name, err)
		}
		if err := checkText(args[1]); err != nil {
			return fmt.Errorf("%s: %v", name, err)
		}
		return nil
	case Unsetenv, Keepenv:
		if err := nargs(1, -1, "NAME..."); err != nil {
			return err
		}
		for _, a := range args {
			if err := checkEnvName(a); err != nil {
				return fmt.Errorf("%s: %v", name, err)
			}
		}
		return nil
	case Command:
		if err := nargs(1, -1, "PATH [ARGS...]"); err != nil {
			return err
		}
		if err := paths(args[:1]); err != nil {
			return err
		}
		for _, a := range args[1:] {
			if err := checkText(a); err != nil {
				return fmt.Errorf("%s: %v", name, err)
			}
		}
		return nil
	case Bwrap:
		if err := nargs(1, -1, "ARGS..."); err != nil {
			return err
		}
		for _, a := range args {
			if err := checkText(a); err != nil {
				return fmt.Errorf("%s: %v", name, err)
			}
		}
		return nil
	case Network:
		if len(args) != 1 || (args[0] != "host" && args[0] != "namespace") {
			return fmt.Errorf("%s: want network host or network namespace", name)
		}
		return nil
	case Project:
		if err := nargs(1, 1, "off|ro|rw"); err != nil {
			return err
		}
		switch args[0] {
		case ProjectOff, ProjectRO, ProjectRW:
			return nil
		}
		return fmt.Errorf("%s: %q: want off, ro or rw", name, args[0])
	case Home:
		if err := nargs(1, 1, "project|shared"); err != nil {
			return err
		}
		switch args[0] {
		case HomeProject, HomeShared:
			return nil
		}
		return fmt.Errorf("%s: %q: want project or shared", name, args[0])
	case Toolchains:
		if err := nargs(1, -1, "auto|off|DIR..."); err != nil {
			return err
		}
		for i, a := range args {
			switch {
			case a == ToolchainsOff && len(args) == 1:
			case a == ToolchainsOff:
				return fmt.Errorf("%s: off stands alone", name)
			case a == ToolchainsAuto && i == 0:
			case a == ToolchainsAuto:
				return fmt.Errorf("%s: auto must be the first word", name)
			default:
				if err := paths([]string{a}); err != nil {
					return err
				}
			}
		}
		return nil
	case Cache:
		if err := nargs(1, 1, "project|shared"); err != nil {
			return err
		}
		switch args[0] {
		case CacheProject, CacheShared:
			return nil
		}
		return fmt.Errorf("%s: %q: want project or shared", name, args[0])
	case Limit:
		if err := nargs(2, 2, "memory|tasks|cpu|tmp VALUE"); err != nil {
			return err
		}
		switch args[0] {
		case LimitMemory, LimitTasks, LimitCPU, LimitTmp:
		default:
			return fmt.Errorf("%s: unknown limit %q: want memory, tasks, cpu or tmp", name, args[0])
		}
		if _, err := ParseLimit(args[0], args[1]); err != nil {
			return fmt.Errorf("%s %s: %v", name, args[0], err)
		}
		return nil
	case Budget:
		if err := nargs(1, 1, "required|optional"); err != nil {
			return err
		}
		switch args[0] {
		case BudgetRequired, BudgetOptional:
			return nil
		}
		return fmt.Errorf("%s: %q: want required or optional", name, args[0])
	case Git:
		if err := nargs(1, 1, "read-only|commit"); err != nil {
			return err
		}
		switch args[0] {
		case GitReadOnly, GitCommit:
			return nil
		}
		return fmt.Errorf("%s: %q: want read-only or commit", name, args[0])
	case GitPush:
		if err := nargs(1, -1, "REMOTE [PATTERN...] [ci:PATH...] [ci]"); err != nil {
			return err
		}
		if !validRemoteName(args[0]) {
			return fmt.Errorf("%s: %q is not a remote's name: use letters, digits, '.', '_' and '-'", name, args[0])
		}
		for i, a := range args[1:] {
			if a == GitPushCI && i == len(args)-2 {
				continue
			}
			if p, ok := strings.CutPrefix(a, GitPushCIPath); ok {
				if !ValidCIPath(p) {
					return fmt.Errorf("%s: %q: ci: names a path in the repository, relative to its top, without . or .. components (ci:.woodpecker/)", name, a)
				}
				continue
			}
			if !ValidPushPattern(a) {
				return fmt.Errorf("%s: %q is not a branch pattern: use a branch name, with at most one '*' as its last component (agent/*)", name, a)
			}
		}
		return nil
	case SeccompAllow, SeccompDeny:
		if err := nargs(1, -1, "SYSCALL..."); err != nil {
			return err
		}
		for _, a := range args {
			if !syscallName(a) || (known != nil && !known(a)) {
				return fmt.Errorf("%s: unknown syscall %q", name, a)
			}
		}
		return nil
	}
	return fmt.Errorf("unknown directive %q", name)
}

func syscallName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

func checkText(s string) error {
	if strings.ContainsRune(s, 0) {
		return fmt.Errorf("%q contains a NUL byte", s)
	}
	return nil
}

func checkPath(p string) error {
	switch {
	case p == "":
		return errors.New("empty path")
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("path %q contains a NUL byte", p)
	case strings.ContainsAny(p, "\n\r"):
		return fmt.Errorf("path %q contains a newline", p)
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("%q is not an absolute path (start it with /, ~/ or $HOME)", p)
	}
	return nil
}

func checkEnvName(s string) error {
	ok := s != ""
	for i := 0; i < len(s) && ok; i++ {
		c := s[i]
		ok = c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9'
	}
	if !ok {
		return fmt.Errorf("%q is not a variable name", s)
	}
	return nil
}

// split splits one line into expanded words.
func split(line string, v Vars) ([]string, error) {
	if strings.ContainsRune(line, 0) {
		return nil, errors.New("line contains a NUL byte")
	}
	line = strings.TrimSuffix(line, "\r")
	var (
		words []string
		cur   strings.Builder
		in    bool // inside a word
	)
	end := func() {
		if in {
			words = append(words, cur.String())
			cur.Reset()
			in = false
		}
	}
	for i := 0; i < len(line); {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			end()
			i++
		case c == '#' && !in:
			return words, nil
		case c == '\'':
			in = true
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated ' quote")
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 2
		case c == '"':
			in = true
			i++
			closed := false
			for i < len(line) {
				c := line[i]
				if c == '"' {
					closed = true
					i++
					break
				}
				if c == '\\' && i+1 < len(line) && strings.IndexByte(`"\$`, line[i+1]) >= 0 {
					cur.WriteByte(line[i+1])
					i += 2
					continue
				}
				if c == '$' {
					val, n, err := expand(line[i:], v)
					if err != nil {
						return nil, err
					}
					cur.WriteString(val)
					i += n
					continue
				}
				cur.WriteByte(c)
				i++
			}
			if !closed {
				return nil, errors.New(`unterminated " quote`)
			}
		case c == '\\':
			if i+1 >= len(line) {
				return nil, errors.New("backslash at end of line (lines do not continue)")
			}
			in = true
			cur.WriteByte(line[i+1])
			i += 2
		case c == '$':
			in = true
			val, n, err := expand(line[i:], v)
			if err != nil {
				return nil, err
			}
			cur.WriteString(val)
			i += n
		case c == '~' && !in && (i+1 == len(line) || line[i+1] == '/' || line[i+1] == ' ' || line[i+1] == '\t'):
			if v.Home == "" {
				return nil, errors.New("~ used but the home directory is unknown")
			}
			in = true
			cur.WriteString(v.Home)
			i++
		default:
			in = true
			cur.WriteByte(c)
			i++
		}
	}
	end()
	return words, nil
}

// expand expands the variable at the start of s (which begins with $) and
// returns its value and the number of bytes it took.
func expand(s string, v Vars) (string, int, error) {
	var name string
	n := 0
	if strings.HasPrefix(s, "${") {
		j := strings.IndexByte(s, '}')
		if j < 0 {
			return "", 0, errors.New("unterminated ${")
		}
		name, n = s[2:j], j+1
	} else {
		j := 1
		for j < len(s) && (s[j] == '_' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= 'a' && s[j] <= 'z' || j > 1 && s[j] >= '0' && s[j] <= '9') {
			j++
		}
		name, n = s[1:j], j
	}
	var val string
	switch name {
	case "HOME":
		val = v.Home
	case "PWD":
		val = v.Pwd
	case "USER":
		val = v.User
	case "":
		return "", 0, errors.New(`stray $: write '$' or \$ for a literal dollar`)
	default:
		return "", 0, fmt.Errorf("unknown variable $%s: only $HOME, $PWD and $USER expand (write '$%s' for a literal)", name, name)
	}
	if val == "" {
		return "", 0, fmt.Errorf("$%s is not set", name)
	}
	return val, n, nil
}

// validRemoteName allows a remote's name of letters, digits, '.', '_' and
// '-', not first a '.' or '-'.
func validRemoteName(n string) bool {
	if n == "" || len(n) > 64 || n[0] == '.' || n[0] == '-' || strings.Contains(n, "..") {
		return false
	}
	for _, c := range n {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// ValidPushPattern allows a branch name of components of letters, digits,
// '.', '_' and '-' (none first a '.', no "..", no ".lock" at the end),
// the last of which may be "*".
func ValidPushPattern(p string) bool {
	parts := strings.Split(p, "/")
	for i, c := range parts {
		if c == "*" && i == len(parts)-1 {
			continue
		}
		if c == "" || c[0] == '.' || c[0] == '-' || strings.Contains(c, "..") || strings.HasSuffix(c, ".lock") {
			return false
		}
		for _, r := range c {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
				return false
			}
		}
	}
	return len(p) <= 200
}

// PushPatternMatches reports whether branch (without refs/heads/) matches
// pattern: equal, or, for "dir/*", any branch below dir/.
func PushPatternMatches(pattern, branch string) bool {
	if dir, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(branch, dir) && len(branch) > len(dir)
	}
	return pattern == branch
}

// ValidCIPath allows a path relative to a repository's top: components
// that are not empty, "." or "..", and no NUL or newline; a trailing '/'
// names a directory.
func ValidCIPath(p string) bool {
	p = strings.TrimSuffix(p, "/")
	if p == "" || len(p) > 200 || strings.ContainsAny(p, "\x00\n") {
		return false
	}
	for _, c := range strings.Split(p, "/") {
		if c == "" || c == "." || c == ".." {
			return false
		}
	}
	return true
}
