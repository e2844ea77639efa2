package claudeupdate

import (
	"io"
	"strings"
	"testing"
	"time"
)

// clock advances 60ms at each call: each Read is one step.
type clock struct{ t time.Time }

func (c *clock) tick() time.Time {
	c.t = c.t.Add(60 * time.Millisecond)
	return c.t
}

func TestBarReader(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int64
		want []string // the lines drawn, in order
	}{
		{"known size", 4_000_000, []string{
			// Reads at 60, 120 (drawn: 120 >= 100), 180, 240 (drawn), EOF at 300.
			"claude 2.0 MB of 4.0 MB  50%  16.7 MB/s",
			"claude 4.0 MB of 4.0 MB 100%  16.7 MB/s",
			"claude 4.0 MB of 4.0 MB 100%  13.3 MB/s",
		}},
		{"unknown size", -1, []string{
			"claude 2.0 MB  16.7 MB/s",
			"claude 4.0 MB  16.7 MB/s",
			"claude 4.0 MB  13.3 MB/s",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &clock{t: time.Unix(0, 0)}
			var out strings.Builder
			b := &barReader{
				r: strings.NewReader(strings.Repeat("x", 4_000_000)),
				w: &out, desc: "claude", size: tc.size, start: c.t, last: c.t, now: c.tick,
			}
			buf := make([]byte, 1_000_000) // a megabyte a read
			for {
				_, err := b.Read(buf)
				if b.ended {
					break
				}
				if err != nil {
					t.Fatalf("Read: %v", err)
				}
			}
			got := out.String()
			if !strings.HasSuffix(got, "\x1b[K\n") {
				t.Fatalf("output does not end with erase and newline: %q", got)
			}
			var lines []string
			for _, l := range strings.Split(strings.TrimSuffix(got, "\n"), "\r")[1:] {
				lines = append(lines, strings.TrimSuffix(l, "\x1b[K"))
			}
			if strings.Join(lines, "|") != strings.Join(tc.want, "|") {
				t.Errorf("lines:\n got %q\nwant %q", lines, tc.want)
			}
			if _, err := b.Read(buf); err != io.EOF {
				t.Errorf("Read after the end = %v, want io.EOF", err)
			}
			if strings.Count(out.String(), "\n") != 1 {
				t.Errorf("more than one newline after the end: %q", out.String())
			}
		})
	}
}
