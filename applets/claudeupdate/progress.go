package claudeupdate

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progress wraps r with a progress bar on a terminal, or plain lines
// before and after otherwise.
func (u *updater) progress(desc, url string, size int64, r io.Reader) io.Reader {
	if u.e.terminal != nil && u.e.terminal(u.err) {
		bar := progressbar.NewOptions64(size,
			progressbar.OptionSetWriter(u.err),
			progressbar.OptionSetDescription(desc),
			progressbar.OptionShowBytes(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionOnCompletion(func() { io.WriteString(u.err, "\n") }),
			progressbar.OptionFullWidth(),
		)
		return io.TeeReader(r, bar)
	}
	if size >= 0 {
		u.printf("downloading %s (%s)", url, mb(size))
	} else {
		u.printf("downloading %s", url)
	}
	return &doneReader{r: r, done: func(n int64, d time.Duration) {
		u.printf("downloaded %s in %.1fs", mb(n), d.Seconds())
	}, start: time.Now()}
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
