package bindir

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/quote"
	"github.com/claude-sandbox/claude-sandbox/internal/release"
)

// SmokeTimeout bounds one smoke test.
const SmokeTimeout = 60 * time.Second

// Smoke runs the binary open as f (the verified descriptor, executed as
// /proc/self/fd/3, never by name) with --version and checks that it prints
// "<v> (Claude Code)". It catches a binary for the wrong libc or CPU before
// it becomes current. The binary is new code not yet trusted, so it runs
// only inside bwrap, confined (see startConfined and smokeArgs): an empty
// environment, a root that holds only /usr, /bin, /sbin, /lib*, a few /etc
// files and private /proc, /dev and /tmp; every namespace new (no
// network), no_new_privs and the launcher's seccomp filter with AF_UNIX
// sockets refused; as root, also as an unprivileged uid without
// capabilities. Nothing of it outlives the test: the PID namespace ends
// with it.
//
// Whether bwrap can set up here is decided before the binary runs, by
// running the same bwrap command line with a trusted program (probeCommand)
// in its place; if that fails the smoke test fails. Nothing the binary
// prints or returns chooses another way to run it.
func (d *Dir) Smoke(ctx context.Context, f *os.File, v release.Version) error {
	want := v.String() + " (Claude Code)"
	ctx, cancel := context.WithTimeout(ctx, SmokeTimeout)
	defer cancel()
	bw := d.findBwrap()
	if bw == "" {
		return fmt.Errorf("smoke test of %s: no bwrap in %s: install bubblewrap; the new binary runs only inside it", v, strings.Join(bwrapPaths, ", "))
	}
	if err := probeBwrap(ctx, bw, f, v); err != nil {
		return err
	}
	out, stderr, err := runSmoke(ctx, bw, f, "/proc/self/fd/3", "--version")
	if ctx.Err() == context.DeadlineExceeded {
		return fmt.Errorf("smoke test of %s failed: --version did not finish within %v", v, SmokeTimeout)
	}
	if err != nil {
		msg := firstLine(stderr)
		if msg == "" {
			msg = firstLine(out)
		}
		if msg != "" {
			return fmt.Errorf("smoke test of %s failed: --version: %w: %s", v, err, msg)
		}
		return fmt.Errorf("smoke test of %s failed: --version: %w", v, err)
	}
	if got := strings.TrimSpace(out); got != want {
		return fmt.Errorf("smoke test of %s failed: --version printed %s, want %s", v, release.Quote([]byte(got), 60), want)
	}
	return nil
}

// bwrapPaths are where the smoke test looks for bwrap (never PATH).
var bwrapPaths = []string{"/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap"}

// probeCommand is the trusted program the probe runs in the binary's
// place: it only exits 0.
var probeCommand = "/usr/bin/true"

// probeBwrap runs the smoke test's bwrap command line with probeCommand as
// the command: a failure is bwrap's own (or the host's), never the
// binary's, and the binary is then not run at all.
func probeBwrap(ctx context.Context, bw string, f *os.File, v release.Version) error {
	out, stderr, err := runSmoke(ctx, bw, f, probeCommand)
	if err == nil {
		return nil
	}
	msg := firstLine(stderr)
	if msg == "" {
		msg = firstLine(out)
	}
	if msg != "" {
		msg = ": " + quote.String(msg)
	}
	return fmt.Errorf("smoke test of %s: bwrap cannot set up here (%s with %s: %v%s): allow unprivileged user namespaces "+
		"(sysctl kernel.unprivileged_userns_clone=1 and user.max_user_namespaces > 0, or an AppArmor "+
		"profile that lets %s use them); the new binary runs only inside bwrap", v, bw, probeCommand, err, msg, bw)
}

// runSmoke runs argv (argv[0] a path inside the sandbox) confined in bwrap
// with f as fd 3 and returns what it printed.
func runSmoke(ctx context.Context, bw string, f *os.File, argv ...string) (stdout, stderr string, err error) {
	var out, errb bytes.Buffer
	for attempt := 0; ; attempt++ {
		out.Reset()
		errb.Reset()
		// ExtraFiles[0] is fd 3 in the child, not close-on-exec: the
		// kernel opens /proc/self/fd/3 for the exec, and a #! interpreter
		// can open it again.
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.ExtraFiles = []*os.File{f}
		cmd.Dir = "/"
		cmd.Env = []string{} // empty, not inherited (nil would be)
		// A daemon the binary leaves behind must not keep us waiting.
		cmd.WaitDelay = 5 * time.Second
		cmd.Stdout = &limited{b: &out, n: 4096}
		cmd.Stderr = &limited{b: &errb, n: 4096}
		var release func()
		if release, err = startConfined(cmd, bw); err == nil {
			err = cmd.Wait()
			release()
		}
		// A file just written may still be open for writing in a child
		// that another goroutine forked meanwhile (ETXTBSY): the same
		// run again, never a weaker one.
		busy := strings.Contains(firstLine(errb.String()), "Text file busy")
		if busy && attempt < 20 {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		break
	}
	// bwrap exits 128+N when the binary is killed by signal N.
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() > 128 && ee.ExitCode() < 128+65 {
		err = fmt.Errorf("signal: %v", syscall.Signal(ee.ExitCode()-128))
	}
	return out.String(), errb.String(), err
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	line, _, _ := strings.Cut(s, "\n")
	if len(line) > 120 {
		line = line[:120] + "..."
	}
	return line
}

// limited keeps the first n bytes written and discards the rest.
type limited struct {
	b *bytes.Buffer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		if len(p) < room {
			room = len(p)
		}
		l.b.Write(p[:room])
	}
	return len(p), nil
}
