//go:build linux

package seccomp_test

import (
	"archive/tar"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// The setuid and setgid tests: a file the sandbox leaves in a writable
// bind with S_ISUID or S_ISGID set runs with the user's rights (or group)
// when another local user starts it on the host, where the bind is not
// nosuid. Each attack runs in its own directory of a read-write bind, and
// afterwards the host side is searched for such a file.

// suidWork returns a sandbox (filtered or the control without filter) with
// a fresh directory of the test user bound read-write at the same path,
// and that directory. The sandbox also shows setuid fixtures, owned by the
// test user, at progMount: suid-src (mode 6755) and suid.tar (a member
// suid-tar of mode 4755, another plain-tar of mode 0755).
func suidWork(t *testing.T, filtered bool) (box, string) {
	t.Helper()
	u := testutil.RequireUser(t)
	dir := programs(t)
	suidFixtures(t, u, dir)
	work := filepath.Join(testutil.PublicDir(t), "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	u.Chown(t, work)
	if !filtered {
		b := controlBox(t).(bwrapBox)
		b.rw = []string{work}
		return b, work
	}
	b := filteredBox(t, "rw "+work)
	if bb, ok := b.(bwrapBox); ok {
		bb.rw = []string{work}
		return bb, work
	}
	return b, work
}

// suidFixtures writes suid-src and suid.tar into the programs directory.
func suidFixtures(t *testing.T, u testutil.User, dir string) {
	t.Helper()
	src := filepath.Join(dir, "suid-src")
	if err := os.WriteFile(src, []byte("#!/bin/sh\nid\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	u.Chown(t, src)
	if err := os.Chmod(src, 0o755|fs.ModeSetuid|fs.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, m := range []struct {
		name string
		mode int64
	}{{"suid-tar", 0o4755}, {"plain-tar", 0o755}} {
		if err := tw.WriteHeader(&tar.Header{Name: m.name, Mode: m.mode, Size: 3, Uid: int(u.Uid), Gid: int(u.Gid),
			Typeflag: tar.TypeReg, Format: tar.FormatUSTAR}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte("x\n\n")); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "suid.tar"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// specialFiles lists the files below dir (on the host) with S_ISUID or
// S_ISGID set, as "mode path" relative to dir.
func specialFiles(t *testing.T, dir string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
			rel, _ := filepath.Rel(dir, p)
			found = append(found, fi.Mode().String()+" "+rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// suidAttacks are the ways to a setuid or setgid file through ordinary
// tools. want is the exact stdout+stderr under the filter (exit status
// wantCode); each runs in an empty directory of its own.
var suidAttacks = []struct {
	name, script, want string
	wantCode           int
}{
	{"chmod 4755", `: > f && chmod 4755 f`,
		"chmod: changing permissions of 'f': Operation not permitted", 1},
	{"chmod 6755", `: > f && chmod 6755 f`,
		"chmod: changing permissions of 'f': Operation not permitted", 1},
	{"chmod g+s", `: > f && chmod g+s f`,
		"chmod: changing permissions of 'f': Operation not permitted", 1},
	{"chmod u+s directory", `mkdir d && chmod u+s d`,
		"chmod: changing permissions of 'd': Operation not permitted", 1},
	{"cp -p", `cp -p ` + progMount + `/suid-src f`,
		"cp: preserving permissions for 'f': Operation not permitted", 1},
	{"install -m 4755", `install -m 4755 ` + progMount + `/suid-src f`,
		"install: cannot change permissions of 'f': Operation not permitted", 1},
	{"tar -p", `tar -xpf ` + progMount + `/suid.tar`,
		"tar: suid-tar: Cannot change mode to rwsr-xr-x: Operation not permitted\n" +
			"tar: Exiting with failure status due to previous errors", 2},
	{"python os.open 0o4755", `python3 -c '
import errno, os
try:
    os.open("f", os.O_CREAT | os.O_WRONLY, 0o4755)
    print("created")
except OSError as e:
    print(errno.errorcode[e.errno])'`, "EPERM", 0},
	{"python os.mkdir 0o2755", `python3 -c '
import errno, os
try:
    os.mkdir("d", 0o2755)
    print("created")
except OSError as e:
    print(errno.errorcode[e.errno])'`, "EPERM", 0},
}

// suidProbes are the raw syscalls, with the probe's answer under the
// filter. NAME64 sets bit 32 of the mode, which the kernel drops.
var suidProbes = []struct {
	name, want string
	amd64Only  bool // the syscall does not exist on arm64
}{
	{"chmod-suid", "EPERM", true},
	{"chmod-sgid", "EPERM", true},
	{"chmod-suid64", "EPERM", true},
	{"fchmod-suid", "EPERM", false},
	{"fchmod-sgid", "EPERM", false},
	{"fchmod-suid64", "EPERM", false},
	{"fchmodat-suid", "EPERM", false},
	{"fchmodat-sgid64", "EPERM", false},
	{"fchmodat2-suid", "EPERM", false},
	{"fchmodat2-sgid", "EPERM", false},
	{"open-suid", "EPERM", true},
	{"openat-suid", "EPERM", false},
	{"openat-sgid", "EPERM", false},
	{"openat-suid64", "EPERM", false},
	{"tmpfile-suid", "EPERM", false},
	{"creat-suid", "EPERM", true},
	{"mkdir-sgid", "EPERM", true},
	{"mkdirat-sgid", "EPERM", false},
	{"mknod-suid", "EPERM", true},
	{"mknodat-suid", "EPERM", false},
	{"mknodat-sgid64", "EPERM", false},
	{"openat2-suid", "ENOSYS", false},
	{"openat2-plain", "ENOSYS", false},
	// Ordinary modes, and the sticky bit, stay allowed.
	{"chmod-plain", "ok", true},
	{"chmod-sticky", "ok", true},
	{"fchmod-plain", "ok", false},
	{"fchmodat-plain", "ok", false},
	{"fchmodat2-plain", "ok", false},
	{"openat-plain", "ok", false},
	{"tmpfile-plain", "ok", false},
	{"mkdirat-plain", "ok", false},
	{"mknodat-plain", "ok", false},
}

func suidProbeNames() []string {
	var ns []string
	for _, p := range suidProbes {
		if !p.amd64Only || runtime.GOARCH == "amd64" {
			ns = append(ns, p.name)
		}
	}
	return ns
}

// TestNoSetuidFiles performs each attack in the sandbox: every one fails
// with EPERM where the tool reports it, and no setuid or setgid file is
// left on the host.
func TestNoSetuidFiles(t *testing.T) {
	b, work := suidWork(t, true)
	for i, a := range suidAttacks {
		t.Run(a.name, func(t *testing.T) {
			dir := filepath.Join(work, "attack"+string(rune('a'+i)))
			r := run(t, b, "export LC_ALL=C; mkdir "+dir+" && cd "+dir+" && { "+a.script+"; } 2>&1")
			if got := strings.TrimSpace(r.Stdout); r.Code != a.wantCode || got != a.want {
				t.Errorf("%s: %s\nwant exit %d and output %q", b.Kind(), r, a.wantCode, a.want)
			}
			if found := specialFiles(t, dir); len(found) > 0 {
				t.Errorf("%s: %s left %q on the host", b.Kind(), a.name, found)
			}
		})
	}
	t.Run("raw syscalls", func(t *testing.T) {
		dir := filepath.Join(work, "probes")
		r := run(t, b, "mkdir "+dir+" && cd "+dir+" && "+progMount+"/probe "+strings.Join(suidProbeNames(), " "))
		if r.Code != 0 {
			t.Fatalf("%s: probe: %s", b.Kind(), r)
		}
		got := map[string]string{}
		for _, l := range lines(r.Stdout) {
			name, res, _ := strings.Cut(l, ": ")
			got[name] = res
		}
		for _, p := range suidProbes {
			if p.amd64Only && runtime.GOARCH != "amd64" {
				continue
			}
			if got[p.name] != p.want {
				t.Errorf("%s: %s = %s, want %s", b.Kind(), p.name, got[p.name], p.want)
			}
		}
		if found := specialFiles(t, dir); len(found) > 0 {
			t.Errorf("%s: the probes left %q on the host", b.Kind(), found)
		}
	})
}

// TestNoSetuidFilesControl runs the attacks without the filter: each
// leaves a setuid or setgid file on the host (or, for mkdir, which drops
// S_ISGID by itself, succeeds), so that TestNoSetuidFiles can fail.
func TestNoSetuidFilesControl(t *testing.T) {
	b, work := suidWork(t, false)
	for i, a := range suidAttacks {
		t.Run(a.name, func(t *testing.T) {
			dir := filepath.Join(work, "attack"+string(rune('a'+i)))
			r := run(t, b, "export LC_ALL=C; mkdir "+dir+" && cd "+dir+" && { "+a.script+"; } 2>&1")
			found := specialFiles(t, dir)
			t.Logf("without filter: exit %d, %q, left %q", r.Code, strings.TrimSpace(r.Stdout), found)
			switch {
			case r.Code != 0:
				t.Errorf("without the filter: %s", r)
			case strings.Contains(a.name, "mkdir"):
				if got := strings.TrimSpace(r.Stdout); got != "created" {
					t.Errorf("without the filter: %s", r)
				}
			case len(found) == 0:
				t.Errorf("without the filter %s left no setuid or setgid file: the test cannot fail", a.name)
			}
		})
	}
}

// TestOrdinaryModes: what the agent does every day keeps its modes.
// git checkout writes executables 0755, builds chmod their output, npm
// marks bin scripts executable, cp -p and tar -p keep ordinary modes.
func TestOrdinaryModes(t *testing.T) {
	testutil.RequireCommand(t, "git")
	b, work := suidWork(t, true)
	script := `cd ` + work + ` && umask 022 &&
		: > a && chmod 755 a && : > b && chmod 0644 b && : > c && chmod u+x,go-r c &&
		mkdir -p d/e && : > d/e/f && chmod -R go-w d && mkdir s && chmod 1777 s &&
		install -m 755 ` + progMount + `/suid-src inst && cp ` + progMount + `/suid-src copy &&
		: > plain && chmod 750 plain && cp -p plain cpp &&
		tar -xpf ` + progMount + `/suid.tar plain-tar &&
		python3 -c 'import os; os.close(os.open("py", os.O_CREAT | os.O_WRONLY, 0o755)); os.mkdir("pyd", 0o700)' &&
		git init -q repo && cd repo && printf '#!/bin/sh\n' > run.sh && chmod +x run.sh && git add run.sh &&
		git -c user.name=t -c user.email=t@example.invalid commit -q -m x && rm run.sh && git checkout -q run.sh && cd .. &&
		stat -c '%a %n' a b c d d/e/f s inst copy cpp plain-tar py pyd repo/run.sh`
	r := run(t, b, script)
	want := "755 a\n644 b\n700 c\n755 d\n644 d/e/f\n1777 s\n755 inst\n755 copy\n750 cpp\n755 plain-tar\n755 py\n700 pyd\n755 repo/run.sh"
	if got := strings.TrimSpace(r.Stdout); r.Code != 0 || got != want {
		t.Errorf("%s: %s\nwant exit 0 and\n%s", b.Kind(), r, want)
	}
}

// TestNoFileCapabilities: file capabilities (security.capability) would
// be the other way to an executable that gains rights when another user
// runs it. The filter does not look at setxattr: the kernel refuses it,
// because writing security.capability needs CAP_SETFCAP and the sandbox's
// processes hold no capability (an empty bounding set, no_new_privs). The
// control shows the same without the filter.
func TestNoFileCapabilities(t *testing.T) {
	const script = `: > f && python3 -c '
import errno, os
# VFS_CAP_REVISION_2, effective, CAP_SETUID permitted
v = bytes([0, 0, 0, 2, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
try:
    os.setxattr("f", "security.capability", v)
    print("set")
except OSError as e:
    print(errno.errorcode[e.errno])' && grep -E '^Cap(Eff|Bnd)' /proc/self/status`
	for _, filtered := range []bool{true, false} {
		b, work := suidWork(t, filtered)
		r := run(t, b, "cd "+work+" && "+script)
		want := "EPERM\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000"
		if got := strings.TrimSpace(r.Stdout); r.Code != 0 || got != want {
			t.Errorf("%s: %s\nwant %q", b.Kind(), r, want)
		}
	}
}
