package npmreg

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"strconv"
	"testing"
)

// block is one 512-byte tar header with name, type flag and size; gnu
// selects the GNU magic ("ustar  \x00") instead of POSIX ustar. fill may
// set more fields before the checksum is computed.
func block(name string, typ byte, size int64, gnu bool, fill func(b []byte)) []byte {
	b := make([]byte, 512)
	copy(b[0:100], name)
	copy(b[100:108], "0000755\x00")
	copy(b[108:116], "0000000\x00")
	copy(b[116:124], "0000000\x00")
	copy(b[124:136], fmt.Sprintf("%011o\x00", size))
	copy(b[136:148], "00000000000\x00")
	b[156] = typ
	if gnu {
		copy(b[257:265], "ustar  \x00")
	} else {
		copy(b[257:265], "ustar\x0000")
	}
	if fill != nil {
		fill(b)
	}
	copy(b[148:156], "        ")
	var sum int64
	for _, c := range b {
		sum += int64(c)
	}
	copy(b[148:156], fmt.Sprintf("%06o\x00 ", sum))
	return b
}

func pad(b []byte) []byte {
	if r := len(b) % 512; r != 0 {
		b = append(b, make([]byte, 512-r)...)
	}
	return b
}

func paxRecords(kv ...string) []byte {
	var out []byte
	for i := 0; i < len(kv); i += 2 {
		rec := " " + kv[i] + "=" + kv[i+1] + "\n"
		n := len(rec)
		for {
			l := len(strconv.Itoa(n)) + len(rec)
			if l == n {
				break
			}
			n = l
		}
		out = append(out, strconv.Itoa(n)+rec...)
	}
	return out
}

func gz(t testing.TB, raw []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(raw)
	zw.Close()
	return buf.Bytes()
}

// sparseSize is what the sparse entries expand to: 900 MB of holes, under
// the 1 GiB ceiling, as in the reported attack.
const sparseSize = 900_000_000

// sparseTarballs are package/claude as a 900 MB sparse file that holds one
// data byte, in each form tar writes: the old GNU type 'S' (tar --sparse
// --format=gnu) and PAX GNU.sparse.* 0.1 and 1.0 (tar --sparse
// --format=pax).
func sparseTarballs(t testing.TB) map[string][]byte {
	end := make([]byte, 1024)
	gnu := block(BinaryPath, 'S', 512, true, func(b []byte) {
		// One sparse entry: 1 byte of data at the end; realsize.
		copy(b[386:398], fmt.Sprintf("%011o\x00", sparseSize-1))
		copy(b[398:410], fmt.Sprintf("%011o\x00", 1))
		copy(b[483:495], fmt.Sprintf("%011o\x00", sparseSize))
	})
	gnuTar := append(append(gnu, pad([]byte("x"))...), end...)

	pax01 := paxRecords("GNU.sparse.size", strconv.Itoa(sparseSize), "GNU.sparse.numblocks", "1",
		"GNU.sparse.offset", strconv.Itoa(sparseSize-1), "GNU.sparse.numbytes", "1")
	pax01Tar := append(block("PaxHeaders/claude", 'x', int64(len(pax01)), false, nil), pad(pax01)...)
	pax01Tar = append(pax01Tar, block(BinaryPath, '0', 1, false, nil)...)
	pax01Tar = append(append(pax01Tar, pad([]byte("x"))...), end...)

	pax10 := paxRecords("GNU.sparse.major", "1", "GNU.sparse.minor", "0",
		"GNU.sparse.name", BinaryPath, "GNU.sparse.realsize", strconv.Itoa(sparseSize))
	data := append(pad([]byte(fmt.Sprintf("1\n%d\n1\n", sparseSize-1))), 'x')
	pax10Tar := append(block("PaxHeaders/claude", 'x', int64(len(pax10)), false, nil), pad(pax10)...)
	pax10Tar = append(pax10Tar, block("package/GNUSparseFile.0/claude", '0', int64(len(data)), false, nil)...)
	pax10Tar = append(append(pax10Tar, pad(data)...), end...)

	return map[string][]byte{"GNU type S": gz(t, gnuTar), "PAX GNU.sparse 0.1": gz(t, pax01Tar), "PAX GNU.sparse 1.0": gz(t, pax10Tar)}
}

// counter counts what is written to it and keeps nothing.
type counter struct{ n int64 }

func (c *counter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// TestExtractSparse: a tarball of a few hundred bytes whose package/claude
// is a sparse file expands to 900 MB of zeros in archive/tar after the
// gzip stream, so a ratio counted on the gzip output never sees it. Each
// form is refused before a byte is written.
func TestExtractSparse(t *testing.T) {
	for name, tb := range sparseTarballs(t) {
		t.Run(name, func(t *testing.T) {
			if len(tb) > 1024 {
				t.Fatalf("the sparse tarball is %d bytes, want a few hundred", len(tb))
			}
			var w counter
			n, err := Extract(bytes.NewReader(tb), &w, LimitsFor(0), nil)
			want := "tarball: package/claude is a sparse file (tar --sparse): refusing it, a platform package has none"
			if err == nil || err.Error() != want {
				t.Errorf("Extract(%d-byte sparse tarball) = %d, %v; want %q", len(tb), n, err, want)
			}
			if w.n != 0 {
				t.Errorf("%d bytes written", w.n)
			}
		})
	}
}

// TestExtractRatioOnWritten: the ratio is checked on what is written,
// before it is written: an entry whose size, from its header, is more than
// MaxRatio times the compressed size is refused before a byte is written.
func TestExtractRatioOnWritten(t *testing.T) {
	big := make([]byte, 100<<20)
	tb := tgz(t, entry{"package/claude", tar.TypeReg, string(big)})
	var w counter
	l := LimitsFor(0)
	l.Compressed = int64(len(tb))
	_, err := Extract(bytes.NewReader(tb), &w, l, nil)
	want := fmt.Sprintf("tarball: package/claude is %d bytes, more than %d times the %d-byte tarball (a gzip bomb?)", len(big), MaxRatio, len(tb))
	if err == nil || err.Error() != want {
		t.Errorf("Extract() = %v, want %q", err, want)
	}
	if w.n != 0 {
		t.Errorf("%d bytes written before the ratio was known to fit", w.n)
	}
}
