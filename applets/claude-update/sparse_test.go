package claudeupdate

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// sparseTarball makes, with GNU tar, the gzipped tarball of a package
// whose package/claude is a 900 MB file of holes (tar --sparse, in format
// pax or gnu): a few hundred bytes.
func sparseTarball(t *testing.T, format string) []byte {
	t.Helper()
	tarCmd := testutil.RequireCommand(t, "tar")
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "package"), 0o755); err != nil {
		t.Fatal(err)
	}
	bin, err := os.Create(filepath.Join(dir, "package", "claude"))
	if err != nil {
		t.Fatal(err)
	}
	if err := bin.Truncate(900_000_000); err != nil {
		t.Fatal(err)
	}
	bin.Close()
	out := filepath.Join(t.TempDir(), "p.tgz")
	cmd := exec.Command(tarCmd, "--sparse", "--format="+format, "-C", dir, "-czf", out, "package")
	if b, err := cmd.CombinedOutput(); err != nil {
		testutil.Missing(t, "tar --sparse --format=%s: %v: %s", format, err, b)
	}
	tb, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(tb) > 1024 {
		t.Fatalf("the sparse tarball is %d bytes, want a few hundred", len(tb))
	}
	return tb
}

// TestNpmSparseTarball: the reported attack, a registry serving a tarball
// of a few hundred bytes whose package/claude is a sparse 900 MB file (with
// the right integrity), is refused before anything is written, in both
// forms tar makes.
func TestNpmSparseTarball(t *testing.T) {
	for _, format := range []string{"pax", "gnu"} {
		t.Run(format, func(t *testing.T) {
			f := newFixture(t)
			f.free = 1 << 40
			tb := sparseTarball(t, format)
			f.npmPublish(map[string]string{"latest": "2.1.100"}, npmVersion{version: "2.1.100", tarball: tb})
			before := f.snapshot()
			_, msg := f.run("--source", "npm", "--registry", f.registry)
			want := "@anthropic-ai/claude-code-" + f.platform + "@2.1.100: tarball: package/claude is a sparse file (tar --sparse): refusing it, a platform package has none"
			if msg != want {
				t.Errorf("%d-byte sparse tarball: %q, want %q", len(tb), msg, want)
			}
			f.assertUnchanged(before)
		})
	}
}
