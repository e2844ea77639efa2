package netnssetup

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/netcfg"
	"github.com/claude-sandbox/claude-sandbox/internal/quote"
)

// followPoll is how often denials --follow looks for new lines.
const followPoll = 200 * time.Millisecond

// denials prints the namespace's denial log, newest last; with follow it
// then prints lines as netns-dns adds them, until ctx ends.
func denials(ctx context.Context, cfg netcfg.Config, name string, follow bool, stdio multicall.Stdio) error {
	path := cfg.DenialLog(name)
	// The rotated half first, so that nothing of the last few MiB is lost.
	if err := printLog(path+".1", stdio.Out, nil); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var off int64
	last, _ := os.Stat(path)
	err := printLog(path, stdio.Out, &off)
	if errors.Is(err, os.ErrNotExist) {
		if !follow {
			if _, serr := os.Stat(cfg.PolicyPath(name)); serr != nil {
				return fmt.Errorf("no denial log of %s (%s): is it up with a policy line, and netns-dns running (systemctl status netns-dns)?", name, quote.String(path))
			}
			return nil // up, nothing denied yet
		}
		err = nil
	}
	if err != nil || !follow {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(followPoll):
		}
		if st, err := os.Stat(path); err == nil && (last == nil || !os.SameFile(st, last) || st.Size() < off) {
			off = 0 // rotated (or made): the new file from its start
			last = st
		}
		if err := printLog(path, stdio.Out, &off); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
}

// printLog prints the complete lines of path from *off on (all if off is
// nil), advancing *off; bytes a terminal would act on are escaped, as the
// names in the log come from the sandbox.
func printLog(path string, w io.Writer, off *int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	start := int64(0)
	if off != nil {
		start = *off
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return err
	}
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadString('\n')
		if err == io.EOF {
			return nil // a partial last line waits for its end
		}
		if err != nil {
			return err
		}
		start += int64(len(line))
		if off != nil {
			*off = start
		}
		fmt.Fprintln(w, printable(strings.TrimSuffix(line, "\n")))
	}
}

// printable returns a log line with each space-separated field that is
// not safe to print (control bytes, escape sequences, bidirectional
// overrides, invalid UTF-8) quoted by quote.String: the names in the log
// come from the sandbox, and a field that is safe reads as logged, so
// that the advice after "allow with:" can be copied.
func printable(s string) string {
	fields := strings.Split(s, " ")
	for i, f := range fields {
		fields[i] = quote.String(f)
	}
	return strings.Join(fields, " ")
}
