package bindir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadState: a reader without the lock tells a missing state file from
// an empty one, reads what SaveState wrote, and refuses what State refuses.
func TestReadState(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadState(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadState(no file) = %v, want fs.ErrNotExist", err)
	}
	d := New(dir)
	if s, err := d.State(); err != nil || len(s.Versions) != 0 {
		t.Fatalf("State(no file) = %+v, %v; want empty", s, err)
	}
	v := v1("2.1.5")
	if err := os.WriteFile(d.Binary(v), []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	sum := strings.Repeat("ab", 32)
	if err := d.Lock(); err != nil {
		t.Fatal(err)
	}
	st := &State{Versions: map[string]Record{"2.1.5": {SHA256: sum, Size: 1, Source: "npm https://r/"}}, Hold: "2.1.5"}
	st.Raise(v)
	if err := d.SaveState(st); err != nil {
		t.Fatal(err)
	}
	d.Unlock()
	got, err := ReadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := got.Record(v); !ok || r.SHA256 != sum || r.Size != 1 || r.Source != "npm https://r/" || got.Hold != "2.1.5" || got.Highest != "2.1.5" {
		t.Errorf("ReadState = %+v, want what was saved", got)
	}

	p := filepath.Join(dir, StateName)
	if err := os.WriteFile(p, []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadState(dir)
	if want := p + " is damaged (invalid character 'o' in literal null (expecting 'u')): move it away and run claude-update again (installed versions will be downloaded again)"; err == nil || err.Error() != want {
		t.Errorf("ReadState(damaged) = %v, want %q", err, want)
	}
	if errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadState(damaged) is fs.ErrNotExist")
	}
	// A symlink is not followed (it could lead to /dev/zero or a FIFO).
	os.Remove(p)
	if err := os.Symlink("/dev/zero", p); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadState(dir); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadState(symlink) = %v, want a refusal", err)
	}
}

// TestUntrustedError: CheckTrusted's refusal carries its parts for callers
// that word it their own way (claude-sandbox doctor).
func TestUntrustedError(t *testing.T) {
	stat := func(p string) (Owner, error) {
		if p == "/home/u" || p == "/home/u/bin" {
			return Owner{UID: 1000, Mode: os.ModeDir | 0o755}, nil
		}
		return Owner{Mode: os.ModeDir | 0o755}, nil
	}
	err := checkTrusted("/home/u/bin", stat, os.Readlink, 0)
	var ue *UntrustedError
	if !errors.As(err, &ue) {
		t.Fatalf("checkTrusted = %v, want an *UntrustedError", err)
	}
	want := UntrustedError{Dir: "/home/u/bin", Path: "/home/u", Problem: "is owned by uid 1000, not root",
		Advice: "set CLAUDE_SBX_BINDIR to a directory that root owns and only root can write, in directories likewise (such as /opt/claude/bin)"}
	if *ue != want {
		t.Errorf("checkTrusted = %+v, want %+v", *ue, want)
	}
}
