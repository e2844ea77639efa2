package net

import (
	"context"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/netctl"
	"github.com/claude-sandbox/claude-sandbox/internal/netctl/netctltest"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// ptyWatch is net watch on a terminal: the test types on master.
type ptyWatch struct {
	master *os.File
	mu     sync.Mutex
	screen strings.Builder
	seen   chan struct{} // signalled on output
	done   chan error
}

func startPtyWatch(t *testing.T, w world) (pw *ptyWatch, pts *os.File, before unix.Termios) {
	t.Helper()
	master, pts := testutil.OpenPty(t)
	before = termios(t, pts)
	pw = &ptyWatch{master: master, seen: make(chan struct{}, 1), done: make(chan error, 1)}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			pw.mu.Lock()
			pw.screen.Write(buf[:n])
			pw.mu.Unlock()
			select {
			case pw.seen <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		pw.done <- w.run(context.Background(), []string{"watch"}, multicall.Stdio{In: pts, Out: pts, Err: pts})
	}()
	return pw, pts, before
}

// waitScreen waits until the output holds s.
func (pw *ptyWatch) waitScreen(t *testing.T, s string) {
	t.Helper()
	for {
		pw.mu.Lock()
		got := pw.screen.String()
		pw.mu.Unlock()
		if strings.Contains(got, s) {
			return
		}
		select {
		case <-pw.seen:
		case err := <-pw.done:
			t.Fatalf("net watch ended (%v) before showing %q:\n%q", err, s, got)
		}
	}
}

func termios(t *testing.T, f *os.File) unix.Termios {
	t.Helper()
	tio, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	return *tio
}

// TestWatchTerminal: on a terminal, watch runs in raw mode (one key, no
// Enter), the keys answer the selected held name, and the terminal's
// modes are put back when it quits (q) and when a signal ends it.
func TestWatchTerminal(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(pw *ptyWatch)
		err  error
	}{
		{"quit", func(pw *ptyWatch) { pw.master.WriteString("q") }, nil},
		{"signal", func(pw *ptyWatch) { syscall.Kill(os.Getpid(), syscall.SIGUSR1) }, multicall.Exit(128 + int(syscall.SIGUSR1))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := netctltest.New(t)
			w := testWorld(srv)
			w.signals = []os.Signal{syscall.SIGUSR1}
			pw, pts, before := startPtyWatch(t, w)
			pw.waitScreen(t, "no query is held")
			if during := termios(t, pts); during.Lflag&unix.ICANON != 0 || during.Lflag&unix.ECHO != 0 {
				t.Errorf("net watch on a terminal: not in raw mode (lflag %#x)", during.Lflag)
			}
			srv.Emit(netctl.Event{Kind: netctl.EventHeld, Time: now, Namespace: "agents-1000", Name: "pypi.org", Type: "A", Until: now.Add(5e9)})
			srv.Emit(netctl.Event{Kind: netctl.EventHeld, Time: now, Namespace: "agents-1000", Name: hostile, Type: "A", Until: now.Add(5e9)})
			pw.waitScreen(t, `good.example.com"`)
			// j selects the second held name; s allows it for the session.
			pw.master.WriteString("js")
			got, _ := srv.WaitRequest(netctl.OpAllow, nil)
			want := netctl.Request{Op: netctl.OpAllow, Namespace: "agents-1000", Name: hostile, Scope: netctl.ScopeSession}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("keys j s sent (-want +got):\n%s", d)
			}
			pw.waitScreen(t, "allowed ")
			tc.end(pw)
			err := <-pw.done
			if multicall.Code(err) != multicall.Code(tc.err) || multicall.Message(err) != "" {
				t.Errorf("net watch ended with %v, want %v", err, tc.err)
			}
			if after := termios(t, pts); after != before {
				t.Errorf("terminal modes not restored:\nbefore %+v\nafter  %+v", before, after)
			}
			pw.mu.Lock()
			screen := pw.screen.String()
			pw.mu.Unlock()
			if strings.Contains(screen, "\x1b]0;") || strings.Contains(screen, "\x07") {
				t.Errorf("net watch drew a hostile name raw: %q", screen)
			}
		})
	}
}
