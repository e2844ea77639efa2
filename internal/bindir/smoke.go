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
// confined (see startConfined): an empty environment, / as its directory,
// no_new_privs and the launcher's seccomp filter; as root, also as an
// unprivileged uid without capabilities, in new network (no network), PID,
// IPC and UTS namespaces. Nothing of it outlives the test: the PID
// namespace ends with it.
func (d *Dir) Smoke(ctx context.Context, f *os.File, v release.Version) error {
	want := v.String() + " (Claude Code)"
	ctx, cancel := context.WithTimeout(ctx, SmokeTimeout)
	defer cancel()
	var (
		out, stderr bytes.Buffer
		err         error
	)
	bw := d.findBwrap()
	for attempt := 0; ; attempt++ {
		out.Reset()
		stderr.Reset()
		// ExtraFiles[0] is fd 3 in the child, not close-on-exec: the
		// kernel opens /proc/self/fd/3 for the exec, and a #! interpreter
		// can open it again.
		cmd := exec.CommandContext(ctx, "/proc/self/fd/3", "--version")
		cmd.ExtraFiles = []*os.File{f}
		cmd.Dir = "/"
		cmd.Env = []string{} // empty, not inherited (nil would be)
		// A daemon the binary leaves behind must not keep us waiting.
		cmd.WaitDelay = 5 * time.Second
		cmd.Stdout = &limited{b: &out, n: 4096}
		cmd.Stderr = &limited{b: &stderr, n: 4096}
		if err = startConfined(cmd, bw); err == nil {
			err = cmd.Wait()
		}
		// A file just written may still be open for writing in a child
		// that another goroutine forked meanwhile (ETXTBSY); that passes.
		busy := errors.Is(err, syscall.ETXTBSY) || bw != "" && strings.Contains(firstLine(stderr.String()), "Text file busy")
		if busy && attempt < 20 {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		// bwrap that cannot set up here (no user namespaces) says so
		// first; the binary then runs confined as below, without it.
		if err != nil && bw != "" && strings.HasPrefix(stderr.String(), "bwrap: ") && !strings.HasPrefix(stderr.String(), "bwrap: execvp") {
			d.logf("smoke test: %s: %s; running it without bwrap", bw, quote.String(firstLine(stderr.String())))
			bw = ""
			continue
		}
		break
	}
	// bwrap exits 128+N when the binary is killed by signal N.
	var ee *exec.ExitError
	if bw != "" && errors.As(err, &ee) && ee.ExitCode() > 128 && ee.ExitCode() < 128+65 {
		err = fmt.Errorf("signal: %v", syscall.Signal(ee.ExitCode()-128))
	}
	if ctx.Err() == context.DeadlineExceeded {
		return fmt.Errorf("smoke test of %s failed: --version did not finish within %v", v, SmokeTimeout)
	}
	if err != nil {
		msg := firstLine(stderr.String())
		if msg == "" {
			msg = firstLine(out.String())
		}
		if msg != "" {
			return fmt.Errorf("smoke test of %s failed: --version: %w: %s", v, err, msg)
		}
		return fmt.Errorf("smoke test of %s failed: --version: %w", v, err)
	}
	if got := strings.TrimSpace(out.String()); got != want {
		return fmt.Errorf("smoke test of %s failed: --version printed %s, want %s", v, release.Quote([]byte(got), 60), want)
	}
	return nil
}

func (d *Dir) logf(format string, args ...any) {
	if d.Logf != nil {
		d.Logf(format, args...)
	}
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
