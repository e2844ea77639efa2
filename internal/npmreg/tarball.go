package npmreg

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
)

// BinaryPath is the agent binary inside a platform package's tarball.
const BinaryPath = "package/claude"

// Extract copies the regular file package/claude of the gzipped tarball r
// to w and returns its size. It reads the whole archive: a second
// package/claude is an error (tar would silently take the last one), as is
// a binary larger than max.
func Extract(r io.Reader, w io.Writer, max int64) (int64, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return 0, fmt.Errorf("tarball: %v", err)
	}
	tr := tar.NewReader(zr)
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
			return 0, fmt.Errorf("tarball: %w", err)
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
		if h.Size > max {
			return 0, fmt.Errorf("tarball: %s is %d bytes, more than %d", BinaryPath, h.Size, max)
		}
		if n, err = io.Copy(w, tr); err != nil {
			return 0, fmt.Errorf("tarball: %w", err)
		}
	}
	if !found {
		return 0, fmt.Errorf("tarball: no %s", BinaryPath)
	}
	// Consume the gzip trailer so that a damaged stream is reported.
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return 0, fmt.Errorf("tarball: %w", err)
	}
	return n, nil
}
