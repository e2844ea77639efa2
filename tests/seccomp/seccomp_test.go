//go:build linux

// Package seccomp_test runs the seccomp filter in the real sandbox, as the
// unprivileged test user: the attacks it must stop, performed for real
// (each also run without the filter, to show that it is the filter that
// stops them), and a corpus of ordinary tools that must keep working.
package seccomp_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/seccomp"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

func TestStatus(t *testing.T) {
	b := filteredBox(t)
	r := run(t, b, "grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status")
	if r.Code != 0 {
		t.Fatalf("%s: %s", b.Kind(), r)
	}
	want := []string{"NoNewPrivs:\t1", "Seccomp:\t2"}
	if got := lines(r.Stdout); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s: /proc/self/status has %q, want %q", b.Kind(), got, want)
	}
}

// Results of the probe program under the filter: the exact errno.
var denied = []struct {
	name, want string
	// kernelAgrees: the kernel may give the same answer without the
	// filter (the family is not built, the number is unknown anyway).
	kernelAgrees bool
}{
	{"keyctl", "EPERM", false},
	{"add_key", "EPERM", false},
	{"mount", "EPERM", false}, // the kernel would say EFAULT
	{"umount2", "EPERM", false},
	{"unshare-user", "EPERM", false}, // bwrap --disable-userns: ENOSPC
	{"clone-newuser", "EPERM", false},
	{"setns", "EPERM", false},
	{"chroot", "EPERM", false},
	{"bpf", "EPERM", false},             // E2BIG
	{"perf_event_open", "EPERM", false}, // EFAULT
	{"userfaultfd", "EPERM", false},
	{"personality-exec", "EPERM", false},
	{"clone3", "ENOSYS", false},         // EINVAL
	{"io_uring_setup", "ENOSYS", false}, // EFAULT
	{"fsopen", "ENOSYS", false},
	{"open_tree", "ENOSYS", false},
	{"syscall-1000", "ENOSYS", true},
	{"af_packet", "EAFNOSUPPORT", false},
	{"af_packet_pair", "EAFNOSUPPORT", false},
	{"af_alg", "EAFNOSUPPORT", true},
	{"af_vsock", "EAFNOSUPPORT", true},
	{"af_unix", "ok", true},
	{"af_inet", "ok", true},
	{"af_inet6", "ok", true},
	{"af_netlink", "ok", true},
	{"personality-query", "ok", true},
	{"tcgets", "ENOTTY", true}, // ioctl itself is allowed (stdin is not a terminal)
	// Not a terminal, not a virtual console: the kernel says ENOTTY.
	{"tiocexcl", "EPERM", false},
	{"tiocexcl64", "EPERM", false},
	{"kdskbent", "EPERM", false},
	{"kdskbent64", "EPERM", false},
	{"kdskbsent", "EPERM", false},
	{"kdsetkeycode", "EPERM", false},
}

func deniedNames() []string {
	var ns []string
	for _, d := range denied {
		ns = append(ns, d.name)
	}
	return ns
}

func TestDenied(t *testing.T) {
	b := filteredBox(t)
	got := probe(t, b, deniedNames()...)
	for _, d := range denied {
		t.Run(d.name, func(t *testing.T) {
			if got[d.name] != d.want {
				t.Errorf("%s: %s = %s, want %s", b.Kind(), d.name, got[d.name], d.want)
			}
		})
	}
}

// TestDeniedControl runs the same probes without the filter: each must get
// another answer, so that TestDenied's answers are the filter's.
func TestDeniedControl(t *testing.T) {
	got := probe(t, controlBox(t), deniedNames()...)
	for _, d := range denied {
		t.Run(d.name, func(t *testing.T) {
			t.Logf("without filter: %s = %s", d.name, got[d.name])
			if !d.kernelAgrees && got[d.name] == d.want {
				t.Errorf("without the filter %s = %s too: the test cannot tell the filter works", d.name, got[d.name])
			}
			if d.want == "ok" && got[d.name] != "ok" {
				t.Errorf("without the filter %s = %s, want ok", d.name, got[d.name])
			}
		})
	}
}

// TestCommands: the util-linux commands fail as the filter says.
func TestCommands(t *testing.T) {
	b := filteredBox(t)
	for _, tc := range []struct {
		name, script, wantErr string
	}{
		{"unshare -U", "unshare -U true", "unshare: unshare failed: Operation not permitted"},
		{"unshare -m", "unshare -m true", "unshare: unshare failed: Operation not permitted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, b, tc.script)
			if r.Code != 1 || innerStderr(r) != tc.wantErr {
				t.Errorf("%s: %s: %s\nwant exit 1 and %q", b.Kind(), tc.script, r, tc.wantErr)
			}
		})
	}
}

// TestTerminalInjection types into the sandbox's controlling terminal with
// TIOCSTI (also with the high bits of the command set) and TIOCLINUX: each
// fails with EPERM and the terminal's input queue stays empty.
func TestTerminalInjection(t *testing.T) {
	legacy, _ := os.ReadFile("/proc/sys/dev/tty/legacy_tiocsti")
	for _, tc := range []struct{ name, want string }{
		{"tiocsti", "EPERM"},
		{"tiocsti64", "EPERM"},
		{"tioclinux", "EPERM"},
		{"tiocsetd", "EPERM"},
		{"tcgets", "ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := filteredBox(t)
			r, queued := onPty(t, b.Command(t, progMount+"/probe "+tc.name))
			if r.Code != 0 || strings.TrimSpace(r.Stdout) != tc.name+": "+tc.want {
				t.Errorf("%s on a pty: %s\nwant %s: %s", b.Kind(), r, tc.name, tc.want)
			}
			if queued != 0 {
				t.Errorf("%s: %d bytes reached the terminal's input", b.Kind(), queued)
			}
		})
	}
	// Control: without the filter the injection works (this kernel has
	// dev.tty.legacy_tiocsti=1), so the test above can see one.
	t.Run("control", func(t *testing.T) {
		if strings.TrimSpace(string(legacy)) != "1" {
			t.Skipf("dev.tty.legacy_tiocsti is %q: TIOCSTI is off in the kernel", strings.TrimSpace(string(legacy)))
		}
		b := controlBox(t)
		for _, name := range []string{"tiocsti", "tiocsti64"} {
			r, queued := onPty(t, b.Command(t, progMount+"/probe "+name))
			if strings.TrimSpace(r.Stdout) != name+": ok" || queued != len("echo INJECTED\n") {
				t.Errorf("without filter %s: %s, %d bytes queued; want ok and 14 bytes", name, r, queued)
			}
		}
	})
}

// TestTerminalLock sets TIOCEXCL on the sandbox's terminal, which would
// make every later open(2) of it fail with EBUSY (a new tab's shell, script,
// the user's own tools): it fails with EPERM (also with the high bits of
// the command set), and the terminal stays openable while the sandbox runs.
func TestTerminalLock(t *testing.T) {
	b := filteredBox(t)
	script := progMount + "/probe tiocexcl tiocexcl64 tiocgexcl"
	r, _ := onPty(t, b.Command(t, script))
	want := []string{"tiocexcl: EPERM", "tiocexcl64: EPERM", "tiocgexcl: ok"}
	if got := lines(r.Stdout); r.Code != 0 || strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("%s on a pty: %s\nwant %q", b.Kind(), r, want)
	}
	// Control: without the filter the lock takes.
	t.Run("control", func(t *testing.T) {
		c := controlBox(t)
		r, _ := onPty(t, c.Command(t, script))
		want := []string{"tiocexcl: ok", "tiocexcl64: ok", "tiocgexcl: EBUSY"}
		if got := lines(r.Stdout); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%s on a pty: %s\nwant %q", c.Kind(), r, want)
		}
	})
}

// TestForeignABI: an i386 (int $0x80) and an x32 syscall never run.
func TestForeignABI(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("i386 and x32 exist on x86_64 only")
	}
	const sigsys = 128 + 31
	ctl := controlBox(t)
	b := filteredBox(t)
	for _, abi := range []string{"i386", "x32"} {
		t.Run(abi, func(t *testing.T) {
			script := progMount + "/probe " + abi + "; echo rc=$?"
			c := run(t, ctl, script)
			r := run(t, b, script)
			t.Logf("without filter: %q", lines(c.Stdout))
			want := []string{"rc=159"}
			if abi == "i386" && len(lines(c.Stdout)) == 1 && lines(c.Stdout)[0] == "rc=139" {
				// The kernel has no ia32 emulation: int $0x80 faults
				// before any syscall (VM tests cover the filter's KILL).
				want = []string{"rc=139"}
			} else if !strings.HasPrefix(c.Stdout, abi+": ") {
				t.Fatalf("without filter the %s probe did not return: %s", abi, c)
			}
			if got := lines(r.Stdout); strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("%s: %s probe printed %q, want %q (killed by SIGSYS = %d)", b.Kind(), abi, got, want, sigsys)
			}
		})
	}
}

// TestConfig: the config file's seccomp-allow and seccomp-deny reach the
// filter.
func TestConfig(t *testing.T) {
	b := filteredBox(t, "seccomp-allow perf_event_open", "seccomp-deny uname")
	if _, ok := b.(launcherBox); !ok {
		b = directBox(t, seccomp.Options{Allow: []string{"perf_event_open"}, Deny: []string{"uname"}})
	}
	if got := probe(t, b, "perf_event_open", "keyctl"); got["perf_event_open"] != "EFAULT" || got["keyctl"] != "EPERM" {
		t.Errorf("%s: with perf_event_open allowed: %v, want perf_event_open EFAULT (the kernel saw it), keyctl EPERM", b.Kind(), got)
	}
	r := run(t, b, "uname")
	if r.Code != 1 || !strings.Contains(r.Stderr, "Operation not permitted") {
		t.Errorf("%s: uname with uname denied: %s", b.Kind(), r)
	}
}

// The compatibility corpus: ordinary work that must keep working.
func TestCompat(t *testing.T) {
	b := filteredBox(t, "ro "+goroot)
	tools := map[string]string{}
	for _, c := range []string{"git", "python3", "node", "gcc", "make", "curl", "tar", "strace", "gdb"} {
		tools[c] = c
	}
	for _, tc := range []struct {
		name, needs, script, want string
		notWant                   []string
	}{
		{name: "sh", script: `sh -c 'echo sh-ok'`, want: "sh-ok"},
		{name: "bash", script: `bash -c 'echo "bash-${BASH_VERSINFO[0]}"'`, want: "bash-5"},
		{name: "git", needs: "git", script: `d=$(mktemp -d) && cd "$d" && git init -q && echo x > f && git add f &&
			git -c user.name=t -c user.email=t@example.invalid commit -q -m first-commit && git log --format=%s`, want: "first-commit"},
		{name: "python3", needs: "python3", script: `python3 -c '
import subprocess, threading
t = threading.Thread(target=print, args=("py-thread",)); t.start(); t.join()
print(subprocess.run(["echo", "py-ok"], capture_output=True, text=True).stdout.strip())'`, want: "py-thread\npy-ok"},
		{name: "node", needs: "node", script: `node -e 'console.log(require("child_process").execFileSync("echo", ["node-ok"]).toString().trim())'`, want: "node-ok"},
		{name: "go build", needs: goroot + "/bin/go", script: `export GOCACHE=$HOME/.cache/go-build GOPATH=$HOME/go GOTOOLCHAIN=local GOPROXY=off GOFLAGS=
			d=$(mktemp -d) && cd "$d" && printf 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("go-ok") }\n' > main.go &&
			` + goroot + `/bin/go mod init example.test/hello 2>/dev/null && ` + goroot + `/bin/go build -o hello . && ./hello`, want: "go-ok"},
		{name: "gcc", needs: "gcc", script: `d=$(mktemp -d) && printf '#include <stdio.h>\nint main(void) { puts("gcc-ok"); return 0; }\n' > "$d/h.c" &&
			gcc -O2 -o "$d/h" "$d/h.c" && "$d/h"`, want: "gcc-ok"},
		{name: "make", needs: "make", script: `d=$(mktemp -d) && printf 'all:\n\t@echo make-ok\n' > "$d/Makefile" && make -s -C "$d"`, want: "make-ok"},
		{name: "curl", needs: "curl", script: `curl --version | head -1 | cut -d' ' -f1`, want: "curl"},
		{name: "tar", needs: "tar", script: `d=$(mktemp -d) && cd "$d" && mkdir a && echo tar-ok > a/f && tar -czf a.tgz a && rm -r a && tar -xzf a.tgz && cat a/f`, want: "tar-ok"},
		{name: "strace", needs: "strace", script: `strace -qq -e trace=getppid -o "$HOME/st" ` + progMount + `/getppid 3 >/dev/null && grep -c '^getppid()' "$HOME/st"`, want: "3"},
		{name: "gdb", needs: "gdb", script: `gdb -nx -batch -ex run -ex 'info inferiors' --args ` + progMount + `/threads 2>&1 | grep -E 'threads: |exited normally|warning|Error'`,
			want: "threads: 3996000\n[Inferior 1 (process N) exited normally]", notWant: []string{"Error disabling address space randomization"}},
		{name: "threads", script: progMount + `/threads`, want: "threads: 3996000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needs != "" {
				if strings.HasPrefix(tc.needs, "/") {
					if _, err := os.Stat(tc.needs); err != nil {
						testutil.Missing(t, "%s: %v", tc.needs, err)
					}
				} else {
					testutil.RequireCommand(t, tc.needs)
				}
			}
			r := run(t, b, tc.script)
			got := normalizePids(strings.TrimSpace(r.Stdout))
			if r.Code != 0 || got != tc.want {
				t.Errorf("%s: %s\nwant exit 0 and stdout %q", b.Kind(), r, tc.want)
			}
			for _, nw := range tc.notWant {
				if strings.Contains(r.Stdout+r.Stderr, nw) {
					t.Errorf("%s: output has %q: %s", b.Kind(), nw, r)
				}
			}
		})
	}
}

// normalizePids replaces "(process 123)" by "(process N)".
func normalizePids(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if i := strings.Index(l, "(process "); i >= 0 {
			if j := strings.Index(l[i:], ")"); j > 0 {
				l = l[:i] + "(process N" + l[i+j:]
			}
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// TestFind: find over a large tree gives the same output, errors and exit
// status with the filter as without.
func TestFind(t *testing.T) {
	const script = "find /usr/share /usr/lib -name x 2>&1; echo rc=$?"
	ctl := run(t, controlBox(t), script)
	b := filteredBox(t)
	r := run(t, b, script)
	if !sameOutput(r.Stdout, ctl.Stdout) || r.Code != 0 {
		t.Errorf("%s: find output differs from the run without filter:\n%s\nwithout:\n%s", b.Kind(), r, ctl)
	}
}

// TestAgentVersion runs the real agent's `claude --version` in the
// sandbox (the binary from scripts/fetch-agent, cached).
func TestAgentVersion(t *testing.T) {
	out, err := exec.Command(filepath.Join(testutil.ModuleRoot(t), "scripts", "fetch-agent")).Output()
	if err != nil {
		testutil.Missing(t, "scripts/fetch-agent: %v", err)
	}
	agent := strings.TrimSpace(string(out))
	var r testutil.Result
	var kind string
	if lb, ok := filteredBox(t).(launcherBox); ok {
		testutil.CopyFile(t, agent, filepath.Join(lb.s.BinDir, "claude"), 0o755)
		r = lb.s.Run(t, "--version")
		kind = lb.Kind()
	} else {
		b := directBox(t, seccomp.Options{})
		b.binds = map[string]string{agent: "/opt/claude/bin/claude"}
		r = run(t, b, "DISABLE_UPDATES=1 DISABLE_AUTOUPDATER=1 /opt/claude/bin/claude --version")
		kind = b.Kind()
	}
	if r.Code != 0 || !strings.HasSuffix(strings.TrimSpace(r.Stdout), " (Claude Code)") {
		t.Errorf("%s: claude --version: %s", kind, r)
	}
}

// TestLauncherPrints: `claude --sandbox-seccomp[=bpf]` prints the table and
// the program the package builds, with the config file's changes applied.
func TestLauncherPrints(t *testing.T) {
	b := filteredBox(t, "seccomp-allow perf_event_open", "seccomp-deny ptrace")
	lb, ok := b.(launcherBox)
	if !ok {
		t.Skip("the launcher cannot run yet")
	}
	opts := seccomp.Options{Allow: []string{"perf_event_open"}, Deny: []string{"ptrace"}}
	f, err := seccomp.Build(opts)
	if err != nil {
		t.Fatal(err)
	}
	r := lb.s.Run(t, "--sandbox-seccomp=bpf")
	if r.Code != 0 || r.Stdout != string(f.Bytes()) {
		t.Errorf("claude --sandbox-seccomp=bpf: exit %d, %d bytes, want the %d bytes of seccomp.Build(%+v); stderr: %s",
			r.Code, len(r.Stdout), len(f.Bytes()), opts, r.Stderr)
	}
	var want strings.Builder
	if err := seccomp.WriteTable(&want, opts); err != nil {
		t.Fatal(err)
	}
	r = lb.s.Run(t, "--sandbox-seccomp")
	if r.Code != 0 || r.Stdout != want.String() {
		t.Errorf("claude --sandbox-seccomp: %s\nwant the table of seccomp.WriteTable", r)
	}
}
