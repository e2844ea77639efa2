package pushlog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestAppendRead(t *testing.T) {
	p := filepath.Join(t.TempDir(), Name)
	es := []Entry{
		{Session: "a", Remote: "origin", Ref: "refs/heads/agent/x", Old: strings.Repeat("0", 40), New: strings.Repeat("ab", 20), Result: Pushed},
		{Session: "b", Remote: "origin", Result: Refused, Why: "no git push line"},
		{Session: "a", Remote: "origin", Ref: "refs/heads/agent/\x1b]0;x\x07", New: "1234", Result: Refused, Why: "bad\nline"},
	}
	for _, e := range es {
		e.Time = time.Unix(0, 0)
		if err := Append(p, e); err != nil {
			t.Fatal(err)
		}
	}
	// A line that is not an entry, and one too long, are skipped.
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("junk\n{\"session\":\"a\",\"why\":\"" + strings.Repeat("x", 2*maxLine) + "\"}\n")
	f.Close()
	Append(p, Entry{Session: "a", Remote: "last", Result: Failed})
	got, err := Read(p, "a")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, e := range got {
		lines = append(lines, e.Line())
	}
	want := "origin agent/x -..abababababab: pushed\n" +
		"origin agent/?]0;x? -..1234: refused (bad?line)\n" +
		"last: failed"
	if s := strings.Join(lines, "\n"); s != want {
		t.Errorf("entries of session a:\n%s\nwant:\n%s", s, want)
	}
	if all, _ := Read(p, ""); len(all) != 4 {
		t.Errorf("all entries: %d, want 4", len(all))
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the log's mode: %v %v", fi.Mode(), err)
	}
	if es, err := Read(filepath.Join(t.TempDir(), "none"), ""); err != nil || es != nil {
		t.Errorf("a missing log: %v %v", es, err)
	}
}

func TestAppendRefusesASymlink(t *testing.T) {
	d := t.TempDir()
	os.Symlink(filepath.Join(d, "elsewhere"), filepath.Join(d, Name))
	if err := Append(filepath.Join(d, Name), Entry{}); err == nil || !strings.Contains(err.Error(), "too many levels of symbolic links") {
		t.Errorf("Append through a symlink: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(d, "elsewhere")); err == nil {
		t.Errorf("Append wrote where the link points")
	}
}

func TestRedact(t *testing.T) {
	url := "https://u:s3cret@forge.example/p.git"
	got := Redact("fatal: unable to access '"+url+"/': u:s3cret rejected", url)
	if strings.Contains(got, "s3cret") || got != "fatal: unable to access 'the remote/': *** rejected" {
		t.Errorf("Redact = %q", got)
	}
}

// A ref json escapes to six bytes a character (what the agent names its
// branch) once made the pushed entry's line too long to read back, so
// the log lost it.
func TestAppendFitsEveryEntry(t *testing.T) {
	p := filepath.Join(t.TempDir(), Name)
	long := "refs/heads/agent/" + strings.Repeat("<", 720)
	e := Entry{Session: "a", Project: "/p/" + strings.Repeat("\u00e9", 2000), Remote: strings.Repeat("&", 1000), Ref: long, Old: strings.Repeat("1", 40), New: strings.Repeat("2", 40), Result: Pushed, Why: strings.Repeat("\xff", 3000)}
	if err := Append(p, e); err != nil {
		t.Fatal(err)
	}
	got, err := Read(p, "a")
	if err != nil || len(got) != 1 {
		t.Fatalf("read back %d entries (%v), want 1", len(got), err)
	}
	g := got[0]
	if g.Result != Pushed || g.Old != e.Old || g.New != e.New || !strings.HasPrefix(long, strings.TrimSuffix(g.Ref, "...")) || !strings.HasSuffix(g.Ref, "...") {
		t.Errorf("read back %+v", g)
	}
}

func TestLineMapsInvisibleAndBidi(t *testing.T) {
	e := Entry{Remote: "o", Ref: "refs/heads/agent/a\u202eb\u2066c\u200bd\u2028e\ufeff", Result: Pushed}
	if got, want := e.Line(), "o agent/a?b?c?d?e? -..-: pushed"; got != want {
		t.Errorf("Line() = %q, want %q", got, want)
	}
}
