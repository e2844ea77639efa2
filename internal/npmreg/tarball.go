package npmreg

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/quote"
)

// BinaryPath is the agent binary inside a platform package's tarball.
const BinaryPath = "package/claude"

// MaxUnpacked is the ceiling on what a platform package unpacks to when
// its packument gives no dist.unpackedSize (the binary is about 400 MB).
const MaxUnpacked = 1 << 30

// MaxRatio bounds how much a tarball may expand: after the first
// ratioSlack bytes, the unpacked stream may be at most MaxRatio times the
// compressed bytes read so far. The agent compresses about 3:1; a gzip bomb
// about 1000:1.
const (
	MaxRatio   = 32
	ratioSlack = 64 << 20
)

// Limits bound one tarball.
type Limits struct {
	// Unpacked is the most any entry, or all entries together, may hold.
	Unpacked int64
	// Why names where Unpacked comes from, for messages.
	Why string
	// Compressed is the tarball's size if the server gave it (0 if not):
	// an entry more than MaxRatio times larger is refused from its header,
	// before a byte of it is written.
	Compressed int64
}

// LimitsFor returns the limits for a packument's dist.unpackedSize (0 if
// absent): that size, but never more than MaxUnpacked.
func LimitsFor(unpackedSize int64) Limits {
	if unpackedSize > 0 && unpackedSize <= MaxUnpacked {
		return Limits{Unpacked: unpackedSize, Why: "the packument's unpackedSize"}
	}
	return Limits{Unpacked: MaxUnpacked, Why: "claude-update's ceiling"}
}

// Tarball is the most compressed bytes a tarball within l may take: the
// unpacked size, plus what tar headers and gzip framing add to
// incompressible data.
func (l Limits) Tarball() int64 { return l.Unpacked + l.Unpacked/64 + 1<<20 }

// ErrLimit marks a tarball that exceeds its limits.
var ErrLimit = errors.New("tarball exceeds its limits")

type limitError struct{ msg string }

func (e *limitError) Error() string   { return e.msg }
func (e *limitError) Is(t error) bool { return t == ErrLimit }

// Extract copies the regular file package/claude of the gzipped tarball r
// to w and returns its size. It reads the whole archive: a second
// package/claude is an error (tar would silently take the last one), and so
// is a sparse entry of any form (GNU type 'S', PAX GNU.sparse.*), whose
// holes archive/tar expands into zeros that cost nothing in the archive.
// Before anything is written it checks the entry's size in the tar header
// against l (and against MaxRatio times l.Compressed, when known) and calls
// start with it (to check free space); no entry may exceed l, the whole
// archive may neither unpack to more than l allows nor take more compressed
// bytes than l.Tarball(), and no write may take the bytes written beyond
// MaxRatio times the compressed bytes read so far.
func Extract(r io.Reader, w io.Writer, l Limits, start func(size int64) error) (int64, error) {
	in := &countReader{r: r, max: l.Tarball(), l: l}
	zr, err := gzip.NewReader(in)
	if err != nil {
		return 0, in.wrap(err)
	}
	out := &ratioReader{r: zr, in: in, max: l.Unpacked + 1<<20, l: l}
	tr := tar.NewReader(out)
	var (
		n     int64
		found bool
	)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, in.wrap(err)
		}
		if sparse(h) {
			return 0, &limitError{fmt.Sprintf("tarball: %s is a sparse file (tar --sparse): refusing it, a platform package has none", entryName(h.Name))}
		}
		if h.Size > l.Unpacked {
			return 0, &limitError{fmt.Sprintf("tarball: %s is %d bytes, more than %d (%s)", entryName(h.Name), h.Size, l.Unpacked, l.Why)}
		}
		if h.Name != BinaryPath && h.Name != "./"+BinaryPath {
			continue
		}
		if found {
			return 0, fmt.Errorf("tarball: %s appears twice", BinaryPath)
		}
		found = true
		if h.Typeflag != tar.TypeReg {
			return 0, fmt.Errorf("tarball: %s is not a regular file", BinaryPath)
		}
		if l.Compressed > 0 && h.Size > ratioSlack && h.Size > MaxRatio*l.Compressed {
			return 0, &limitError{fmt.Sprintf("tarball: %s is %d bytes, more than %d times the %d-byte tarball (a gzip bomb?)", BinaryPath, h.Size, MaxRatio, l.Compressed)}
		}
		if start != nil {
			if err := start(h.Size); err != nil {
				return 0, err
			}
		}
		if n, err = io.Copy(&ratioWriter{w: w, in: in}, tr); err != nil {
			return 0, in.wrap(err)
		}
	}
	if !found {
		return 0, fmt.Errorf("tarball: no %s", BinaryPath)
	}
	// Consume the gzip trailer so that a damaged stream is reported.
	if _, err := io.Copy(io.Discard, out); err != nil {
		return 0, in.wrap(err)
	}
	return n, nil
}

// sparse reports whether h is a sparse entry in any of tar's forms.
func sparse(h *tar.Header) bool {
	if h.Typeflag == tar.TypeGNUSparse {
		return true
	}
	for k := range h.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}

// ratioWriter refuses a write that would take the bytes written beyond
// MaxRatio times the compressed bytes read (after the first ratioSlack):
// it counts what reaches the file, holes and all, before it gets there.
type ratioWriter struct {
	w  io.Writer
	in *countReader
	n  int64
}

func (r *ratioWriter) Write(p []byte) (int, error) {
	if next := r.n + int64(len(p)); next > ratioSlack && next > MaxRatio*r.in.n {
		return 0, &limitError{fmt.Sprintf("tarball: unpacks to more than %d times its compressed size (a gzip bomb?)", MaxRatio)}
	}
	n, err := r.w.Write(p)
	r.n += int64(n)
	return n, err
}

// entryName quotes an entry name from the archive for a message.
func entryName(name string) string {
	if len(name) > 100 {
		return quote.String(name[:100]) + "..."
	}
	return quote.String(name)
}

// countReader counts compressed bytes and stops at max.
type countReader struct {
	r   io.Reader
	n   int64
	max int64
	l   Limits
	err error
}

func (c *countReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if c.n >= c.max {
		c.err = &limitError{fmt.Sprintf("tarball: more than %d bytes, beyond %s %d and the room tar and gzip need", c.max, c.l.Why, c.l.Unpacked)}
		return 0, c.err
	}
	if int64(len(p)) > c.max-c.n {
		p = p[:c.max-c.n]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// wrap returns the limit error if the stream hit one (gzip and tar may
// replace the errors of the reader under them), else err prefixed.
func (c *countReader) wrap(err error) error {
	if c.err != nil {
		return c.err
	}
	if errors.Is(err, ErrLimit) {
		return err
	}
	return fmt.Errorf("tarball: %w", err)
}

// ratioReader counts unpacked bytes and stops a gzip bomb.
type ratioReader struct {
	r   io.Reader
	in  *countReader
	n   int64
	max int64
	l   Limits
}

func (z *ratioReader) Read(p []byte) (int, error) {
	n, err := z.r.Read(p)
	z.n += int64(n)
	switch {
	case z.n > z.max:
		return 0, &limitError{fmt.Sprintf("tarball: unpacks to more than %d bytes (%s)", z.l.Unpacked, z.l.Why)}
	case z.n > ratioSlack && z.n > MaxRatio*z.in.n:
		return 0, &limitError{fmt.Sprintf("tarball: unpacks to more than %d times its compressed size (a gzip bomb?)", MaxRatio)}
	}
	return n, err
}
