package claudeupdate

import (
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"

	"github.com/claude-sandbox/claude-sandbox/internal/quote"
)

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progress wraps r with a progress line on a terminal, or plain lines
// before and after otherwise.
func (u *updater) progress(desc, url string, size int64, r io.Reader) io.Reader {
	if u.e.terminal != nil && u.e.terminal(u.err) {
		t := time.Now()
		return &barReader{r: r, w: u.err, desc: desc, size: size, start: t, last: t, now: time.Now}
	}
	if size >= 0 {
		u.printf("downloading %s (%s)", quote.String(url), mb(size))
	} else {
		u.printf("downloading %s", quote.String(url))
	}
	return &doneReader{r: r, done: func(n int64, d time.Duration) {
		u.printf("downloaded %s in %.1fs", mb(n), d.Seconds())
	}, start: time.Now()}
}

// barEvery is how often barReader redraws its line.
const barEvery = 100 * time.Millisecond

// barReader redraws one terminal line ("\r" and erase to the end) with the
// bytes read so far, the share of size (when known) and the rate, at most
// every barEvery and once more, with a newline, at EOF or error.
//
// It is a few lines of our own rather than a progress-bar library: such a
// library's package initialisation runs in every applet of the multicall
// binary, and it made each start of the launcher about 3 ms slower.
type barReader struct {
	r     io.Reader
	w     io.Writer
	desc  string
	size  int64 // < 0: unknown
	n     int64
	start time.Time
	last  time.Time
	now   func() time.Time
	ended bool
}

func (b *barReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.n += int64(n)
	if b.ended {
		return n, err
	}
	t := b.now()
	if err != nil {
		b.ended = true
		b.draw(t)
		io.WriteString(b.w, "\n")
	} else if t.Sub(b.last) >= barEvery {
		b.draw(t)
	}
	return n, err
}

func (b *barReader) draw(t time.Time) {
	b.last = t
	line := b.desc + " " + mb(b.n)
	if b.size > 0 {
		line += fmt.Sprintf(" of %s %3d%%", mb(b.size), b.n*100/b.size)
	}
	if d := t.Sub(b.start).Seconds(); d > 0 {
		line += fmt.Sprintf("  %.1f MB/s", float64(b.n)/1e6/d)
	}
	io.WriteString(b.w, "\r"+line+"\x1b[K")
}

// doneReader calls done once at EOF.
type doneReader struct {
	r     io.Reader
	n     int64
	start time.Time
	done  func(int64, time.Duration)
}

func (d *doneReader) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	d.n += int64(n)
	if err == io.EOF && d.done != nil {
		d.done(d.n, time.Since(d.start))
		d.done = nil
	}
	return n, err
}
