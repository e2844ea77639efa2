package claude

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkPlanAndBind is the launcher's own work before bwrap starts, in
// a loop: the inputs, the plan (toolchains from the test's PATH) while the
// system's sources are opened, every bind source opened and checked on an
// fd, the bind roots' modes recorded.
// Compare revisions with benchstat; `make bench-launcher` times whole
// starts.
func BenchmarkPlanAndBind(b *testing.B) {
	dir := b.TempDir()
	home := filepath.Join(dir, "home")
	bin := filepath.Join(dir, "bin")
	for _, d := range []string{home, bin, filepath.Join(dir, "tmp")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bin, "claude"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		b.Fatal(err)
	}
	project := filepath.Join(home, "project")
	if err := os.Mkdir(project, 0o700); err != nil {
		b.Fatal(err)
	}
	b.Chdir(project)
	b.Setenv("HOME", home)
	b.Setenv("CLAUDE_SBX_BINDIR", bin)
	b.Setenv("CLAUDE_SBX_TMP", filepath.Join(dir, "tmp"))
	b.Setenv("CLAUDE_SBX_NETNS", "benchnone")
	b.Setenv("XDG_RUNTIME_DIR", "")
	os.Unsetenv("XDG_RUNTIME_DIR")
	b.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	os.Unsetenv("DBUS_SESSION_BUS_ADDRESS")
	o := options{mode: modeRun, shell: true, args: []string{"-c", "true"}}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		early := earlyOpen()
		in, err := readInputs()
		if err != nil {
			b.Fatal(err)
		}
		l, err := decide(o, in)
		if err != nil {
			b.Fatal(err)
		}
		bound, err := openBinds(l, in, early)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := recordRootModes(l, bound); err != nil {
			b.Fatal(err)
		}
		bound.Close()
		early.close()
		if in.cfg != nil {
			in.cfg.Close()
		}
	}
}
