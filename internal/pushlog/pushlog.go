// Package pushlog is the log of the agent's pushes (git push lines in
// ~/.claude-sandbox-init): one JSON object per line in
// ~/.claude-sandbox-git/push.log, appended by the launcher and its
// pre-receive hook on the host, read by `claude-sandbox git log` and by
// the end-of-session summary.
package pushlog

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// Name is the log's name in the directory of the agent's repositories.
const Name = "push.log"

// Path returns the log of the user whose home is home.
func Path(home string) string { return filepath.Join(home, ".claude-sandbox-git", Name) }

// Results of an entry.
const (
	Pushed  = "pushed"
	Refused = "refused"
	Failed  = "failed"
)

// Entry is one push of one ref, or a push refused before its refs were
// known (Ref empty).
type Entry struct {
	Time    time.Time `json:"time"`
	Session string    `json:"session"`
	Project string    `json:"project"`
	Remote  string    `json:"remote"`
	Ref     string    `json:"ref,omitempty"`
	Old     string    `json:"old,omitempty"`
	New     string    `json:"new,omitempty"`
	Result  string    `json:"result"`
	Why     string    `json:"why,omitempty"`
	// Push is the id of the connection the entry is of: the launcher
	// tells from it whether its hook logged anything.
	Push string `json:"push,omitempty"`
}

// maxLine bounds an entry's line, as written and as read.
const maxLine = 4096

// Append adds e to the log at path, made 0600 if missing, never through a
// symlink; one write, so that entries of processes at once stay whole.
func Append(path string, e Entry) error {
	b, err := fit(e)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("the push log: %w", err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// fit returns e as JSON of under maxLine bytes: its strings cut (a ref
// the agent names, a path, a message) until it fits, since JSON writes
// some bytes as six and Read skips a line over the bound.
func fit(e Entry) ([]byte, error) {
	for n := 1024; n >= 8; n /= 2 {
		c := e
		for _, s := range []*string{&c.Session, &c.Project, &c.Remote, &c.Ref, &c.Old, &c.New, &c.Result, &c.Why, &c.Push} {
			*s = clip(*s, n)
		}
		b, err := json.Marshal(c)
		if err != nil || len(b) < maxLine {
			return b, err
		}
	}
	return nil, errors.New("the push log: an entry does not fit a line")
}

// clip cuts s to at most n bytes, at a character, marked with "...".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}

// Read returns the log's entries, oldest first, those of session only if
// it is not "". A missing log has none; a line that is not an entry is
// skipped.
func Read(path, session string) ([]Entry, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the push log: %w", err)
	}
	defer f.Close()
	var out []Entry
	r := bufio.NewReaderSize(f, maxLine)
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			continue
		}
		if len(line) > 0 {
			var e Entry
			if json.Unmarshal(line, &e) == nil && (session == "" || e.Session == session) {
				out = append(out, e)
			}
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("the push log: %w", err)
		}
	}
}

// Short returns the first 12 hex digits of an object id, "-" for none.
func Short(id string) string {
	switch {
	case id == "" || strings.Trim(id, "0") == "":
		return "-"
	case len(id) > 12:
		return id[:12]
	}
	return id
}

// Line returns e as one line of text, with what a terminal would take
// for a control, and what it draws invisibly or reorders (the ref's name
// is the agent's), as '?'.
func (e Entry) Line() string { return printable(e.line()) }

func printable(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == utf8.RuneError,
			r >= 0x200b && r <= 0x200f, // zero-width, LRM, RLM
			r >= 0x2028 && r <= 0x202e, // line and paragraph separators, bidi embeddings and overrides
			r >= 0x2060 && r <= 0x2069, // word joiner, invisible operators, bidi isolates
			r == 0xfeff, r == 0x061c, r == 0x00ad:
			return '?'
		}
		return r
	}, s)
}

func (e Entry) line() string {
	s := e.Remote
	if e.Ref != "" {
		s += " " + strings.TrimPrefix(e.Ref, "refs/heads/") + " " + Short(e.Old) + ".." + Short(e.New)
	}
	s += ": " + e.Result
	if e.Why != "" {
		s += " (" + e.Why + ")"
	}
	return s
}

// The environment the launcher gives git receive-pack, and so its
// pre-receive hook (`claude-sandbox git pre-receive`), for one push.
const (
	EnvPrefix   = "CLAUDE_SBX_PUSH_"
	EnvURL      = EnvPrefix + "URL"      // where to push
	EnvRemote   = EnvPrefix + "REMOTE"   // the remote's name
	EnvPatterns = EnvPrefix + "PATTERNS" // branch patterns, one per line
	EnvCI       = EnvPrefix + "CI"       // "1": CI definitions may change
	EnvCIPaths  = EnvPrefix + "CIPATHS"  // CI definitions, one per line
	EnvProject  = EnvPrefix + "PROJECT"  // the project, for the log
	EnvSession  = EnvPrefix + "SESSION"  // the session's id, for the log
	EnvLog      = EnvPrefix + "LOG"      // the log's path
	EnvGit      = EnvPrefix + "GIT"      // the user's git, by its path
	EnvPush     = EnvPrefix + "ID"       // the connection's id, for the log (Entry.Push)
	// EnvSaved prefixes the user's own value of a variable the launcher
	// set for receive-pack (EnvSaved+"GIT_CONFIG_GLOBAL"); absent when the
	// user had none.
	EnvSaved = EnvPrefix + "SAVED_"
)

// Isolated are the variables git receive-pack runs with, so that only the
// staging repository's own config applies; the hook puts the user's back
// for the push.
var Isolated = []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}

// LastLine is the last line of a command's stderr, or its error.
func LastLine(stderr string, err error) string {
	s := strings.TrimSpace(stderr)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if s == "" && err != nil {
		s = err.Error()
	}
	return s
}

// Redact takes url, and the user and password in it, out of s: the agent
// reads what the launcher and the hook answer.
func Redact(s, url string) string {
	s = strings.ReplaceAll(s, url, "the remote")
	if _, rest, ok := strings.Cut(url, "://"); ok {
		if info, _, ok := strings.Cut(rest, "@"); ok && info != "" && !strings.Contains(info, "/") {
			s = strings.ReplaceAll(s, info, "***")
		}
	}
	return s
}
