package bindir

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/release"
)

// install puts version v in d (as Install does) and makes it current.
func install(t *testing.T, d *Dir, st *State, v release.Version) {
	t.Helper()
	body := "#!/bin/sh\necho '" + v.String() + " (Claude Code)'\n"
	f, sum, size, err := d.Install(context.Background(), v, func(w io.Writer) error { _, err := io.WriteString(w, body); return err }, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st.Versions[v.String()] = Record{SHA256: sum, Size: size}
	if err := d.Switch(st, v, f); err != nil {
		t.Fatalf("Switch(%s) = %v", v, err)
	}
}

// TestSwitchKilledBetweenRenames: a run killed between the renames of a
// switch (simulated by stopping after each one) must not lose the rollback
// target: the next locked run finds either the old pair (current, previous)
// or the new one.
func TestSwitchKilledBetweenRenames(t *testing.T) {
	for stop := 1; stop <= 2; stop++ {
		t.Run("after rename "+itoa(stop), func(t *testing.T) {
			d := New(filepath.Join(t.TempDir(), "bin"))
			if err := d.Lock(); err != nil {
				t.Fatal(err)
			}
			st := &State{Versions: map[string]Record{}}
			install(t, d, st, v1("2.1.1"))
			install(t, d, st, v1("2.1.2"))
			renames := 0
			killed := errors.New("killed")
			testHookRenamed = func() error {
				if renames++; renames == stop {
					return killed
				}
				return nil
			}
			defer func() { testHookRenamed = nil }()
			body := "#!/bin/sh\necho '2.1.3 (Claude Code)'\n"
			f, _, _, err := d.Install(context.Background(), v1("2.1.3"), func(w io.Writer) error { _, err := io.WriteString(w, body); return err }, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := d.Switch(st, v1("2.1.3"), f); !errors.Is(err, killed) {
				t.Fatalf("Switch() = %v, want the simulated kill", err)
			}
			d.Unlock()
			testHookRenamed = nil

			d2 := New(d.Path)
			if err := d2.Lock(); err != nil {
				t.Fatal(err)
			}
			defer d2.Unlock()
			cur, _, _ := d2.Current()
			prev, ok, _ := d2.PreviousVersion()
			got := cur.String() + " " + prev.String()
			if !ok || (got != "2.1.2 2.1.1" && got != "2.1.3 2.1.2") {
				t.Errorf("after the kill: current %s, previous %s (%v); want 2.1.2 and 2.1.1, or 2.1.3 and 2.1.2", cur, prev, ok)
			}
			if l, _ := os.Readlink(filepath.Join(d.Path, Previous)); l != "claude."+prev.String() {
				t.Errorf("claude.previous -> %s, want claude.%s", l, prev)
			}
		})
	}
}

func itoa(n int) string { return string(rune('0' + n)) }

// TestLockReplacesOpenLock: a lock file that others could open (the 0644
// one of earlier versions, or a private one made readable) is replaced, so
// that a descriptor opened and flocked before blocks nothing; the
// directory is closed to others again.
func TestLockReplacesOpenLock(t *testing.T) {
	d := New(filepath.Join(t.TempDir(), "bin"))
	priv := filepath.Join(d.Path, PrivateDir)
	if err := os.MkdirAll(priv, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{oldLockName, LockName} {
		p := filepath.Join(d.Path, name)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, 0o644)
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Lock(); err != nil {
		t.Fatalf("Lock() with an old descriptor flocked = %v", err)
	}
	defer d.Unlock()
	for name, want := range map[string]os.FileMode{PrivateDir: os.ModeDir | 0o700, LockName: 0o600} {
		if fi, err := os.Lstat(filepath.Join(d.Path, name)); err != nil || fi.Mode() != want {
			t.Errorf("%s: %v, %v; want mode %v", name, fi.Mode(), err, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(d.Path, oldLockName)); !os.IsNotExist(err) {
		t.Errorf("%s left: %v", oldLockName, err)
	}
}
