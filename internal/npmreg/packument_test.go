package npmreg

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/release"
)

const pkg = "@anthropic-ai/claude-code-linux-x64"

func sri(b []byte) string {
	s := sha512.Sum512(b)
	return "sha512-" + base64.StdEncoding.EncodeToString(s[:])
}

func TestPackument(t *testing.T) {
	integ := sri([]byte("tarball"))
	doc := `{"name":"` + pkg + `","dist-tags":{"latest":"2.1.332","stable":"2.1.300","bad":"x/y"},"versions":{
		"2.1.332":{"version":"2.1.332","dist":{"integrity":"` + integ + `","tarball":"https://r.example/t-2.1.332.tgz"}},
		"2.1.300":{"version":"2.1.300","dist":{"integrity":"sha1-abc","tarball":"https://r.example/t.tgz"}},
		"2.1.301":{"version":"2.1.301","dist":{"integrity":"` + integ + `","tarball":"http://r.example/t.tgz"}},
		"2.1.302":{"version":"2.1.999","dist":{"integrity":"` + integ + `","tarball":"https://r.example/t.tgz"}}}}`
	p, err := ParsePackument([]byte(doc), pkg)
	if err != nil {
		t.Fatal(err)
	}
	tagTests := []struct{ name, tag, want, err string }{
		{"latest", "latest", "2.1.332", ""},
		{"stable", "stable", "2.1.300", ""},
		{"missing", "next", "", `@anthropic-ai/claude-code-linux-x64 has no dist-tag "next" (it has: bad, latest, stable)`},
		{"bad", "bad", "", `@anthropic-ai/claude-code-linux-x64: dist-tag bad: invalid version "x/y"`},
	}
	for _, tt := range tagTests {
		t.Run("tag "+tt.name, func(t *testing.T) {
			v, err := p.Tag(tt.tag)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("Tag(%s) = %v, %v; want error %q", tt.tag, v, err, tt.err)
				}
				return
			}
			if err != nil || v.String() != tt.want {
				t.Fatalf("Tag(%s) = %v, %v; want %s", tt.tag, v, err, tt.want)
			}
		})
	}
	artTests := []struct{ name, v, tarball, err string }{
		{"good", "2.1.332", "https://r.example/t-2.1.332.tgz", ""},
		{"sha1 only", "2.1.300", "", `@anthropic-ai/claude-code-linux-x64@2.1.300: no sha512 integrity (got sha1-abc)`},
		{"http tarball", "2.1.301", "", `@anthropic-ai/claude-code-linux-x64@2.1.301: tarball URL http://r.example/t.tgz is not https`},
		{"version mismatch", "2.1.302", "", `@anthropic-ai/claude-code-linux-x64: entry 2.1.302 says version 2.1.999`},
		{"absent", "2.1.1", "", `@anthropic-ai/claude-code-linux-x64 has no version 2.1.1`},
	}
	for _, tt := range artTests {
		t.Run("artifact "+tt.name, func(t *testing.T) {
			v, _ := release.ParseVersion(tt.v)
			a, err := p.Artifact(v)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("Artifact(%s) = %+v, %v; want error %q", tt.v, a, err, tt.err)
				}
				return
			}
			if err != nil || a.Tarball != tt.tarball || len(a.SHA512) != 1 {
				t.Fatalf("Artifact(%s) = %+v, %v", tt.v, a, err)
			}
		})
	}
	if _, err := ParsePackument([]byte(doc), "@anthropic-ai/claude-code-linux-arm64"); err == nil || err.Error() != `packument of @anthropic-ai/claude-code-linux-arm64 names package @anthropic-ai/claude-code-linux-x64` {
		t.Errorf("ParsePackument(other name) = %v", err)
	}
}

func TestParseIntegrity(t *testing.T) {
	a, b := sri([]byte("a")), sri([]byte("b"))
	tests := []struct {
		name, in string
		n        int
		err      string
	}{
		{"one", a, 1, ""},
		{"two and sha1", "sha1-xyz " + a + " " + b + "?opt", 2, ""},
		{"bad base64", "sha512-!!!", 0, `integrity sha512-!!! is not a sha512 digest`},
		{"short", "sha512-" + base64.StdEncoding.EncodeToString([]byte("short")), 0, `integrity sha512-c2hvcnQ= is not a sha512 digest`},
		{"none", "sha256-abc", 0, `no sha512 integrity (got sha256-abc)`},
		{"empty", "", 0, `no sha512 integrity (got "")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseIntegrity(tt.in)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("ParseIntegrity(%q) = %v; want %q", tt.in, err, tt.err)
				}
				return
			}
			if err != nil || len(got) != tt.n {
				t.Fatalf("ParseIntegrity(%q) = %d digests, %v; want %d", tt.in, len(got), err, tt.n)
			}
		})
	}
}

func TestURL(t *testing.T) {
	if got, want := URL("https://r.example/api/npm/", pkg), "https://r.example/api/npm/@anthropic-ai%2fclaude-code-linux-x64"; got != want {
		t.Fatalf("URL() = %q, want %q", got, want)
	}
	if got := Package("linux-arm64-musl"); got != "@anthropic-ai/claude-code-linux-arm64-musl" {
		t.Fatalf("Package() = %q", got)
	}
}

type entry struct {
	name string
	typ  byte
	body string
}

func tgz(t testing.TB, entries ...entry) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: 0o755, Size: int64(len(e.body))}
		if e.typ != tar.TypeReg {
			h.Size = 0
			h.Linkname = "/etc/passwd"
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

func TestExtract(t *testing.T) {
	good := tgz(t, entry{"package/package.json", tar.TypeReg, "{}"}, entry{"package/claude", tar.TypeReg, "BINARY"}, entry{"package/README.md", tar.TypeReg, "x"})
	tests := []struct {
		name string
		in   []byte
		max  int64
		want string
		err  string
	}{
		{name: "good", in: good, max: 100, want: "BINARY"},
		{name: "missing", in: tgz(t, entry{"package/other", tar.TypeReg, "x"}), max: 100, err: "tarball: no package/claude"},
		{name: "twice", in: tgz(t, entry{"package/claude", tar.TypeReg, "a"}, entry{"package/claude", tar.TypeReg, "b"}), max: 100, err: "tarball: package/claude appears twice"},
		{name: "symlink", in: tgz(t, entry{"package/claude", tar.TypeSymlink, ""}), max: 100, err: "tarball: package/claude is not a regular file"},
		{name: "too big", in: good, max: 3, err: "tarball: package/claude is 6 bytes, more than 3 (the packument's unpackedSize)"},
		{name: "other entry too big", in: tgz(t, entry{"package/README.md", tar.TypeReg, "0123456789"}, entry{"package/claude", tar.TypeReg, "BINARY"}), max: 8, err: "tarball: package/README.md is 10 bytes, more than 8 (the packument's unpackedSize)"},
		{name: "not gzip", in: []byte("<html>"), max: 100, err: "tarball: unexpected EOF"},
		{name: "cut", in: good[:len(good)-10], max: 100, err: "tarball: unexpected EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			n, err := Extract(bytes.NewReader(tt.in), &out, LimitsFor(tt.max), nil)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("Extract() = %d, %v; want error %q", n, err, tt.err)
				}
				return
			}
			if err != nil || out.String() != tt.want || n != int64(len(tt.want)) {
				t.Fatalf("Extract() = %d, %q, %v; want %q", n, out.String(), err, tt.want)
			}
		})
	}
}

func FuzzParsePackument(f *testing.F) {
	f.Add([]byte(`{"name":"` + pkg + `","dist-tags":{"latest":"2.1.1"},"versions":{"2.1.1":{"version":"2.1.1","dist":{"integrity":"` + sri(nil) + `","tarball":"https://x/t.tgz"}}}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParsePackument(b, pkg)
		if err != nil {
			return
		}
		v, err := p.Tag("latest")
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error with newline: %q", err)
			}
			return
		}
		a, err := p.Artifact(v)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error with newline: %q", err)
			}
			return
		}
		if !strings.HasPrefix(a.Tarball, "https://") || len(a.SHA512) == 0 {
			t.Fatalf("accepted %+v", a)
		}
		for _, s := range a.SHA512 {
			if len(s) != sha512.Size {
				t.Fatalf("digest of %d bytes", len(s))
			}
		}
	})
}

func FuzzParseIntegrity(f *testing.F) {
	f.Add(sri([]byte("x")))
	f.Add("sha1-x sha512-y")
	f.Fuzz(func(t *testing.T, s string) {
		sums, err := ParseIntegrity(s)
		if err == nil && len(sums) == 0 {
			t.Fatal("no digests and no error")
		}
	})
}

func FuzzExtract(f *testing.F) {
	f.Add(tgz(f, entry{"package/claude", tar.TypeReg, "BINARY"}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var out bytes.Buffer
		n, err := Extract(bytes.NewReader(b), &out, LimitsFor(1<<20), nil)
		if err == nil && n != int64(out.Len()) {
			t.Fatalf("Extract() = %d, wrote %d", n, out.Len())
		}
	})
}
