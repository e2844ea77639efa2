package release

import (
	"strings"
	"testing"
)

const sum = "6b05079f630371cb908b44fae1e24bddadc299b86b05079f630371cb908b44fa"

func TestParseManifest(t *testing.T) {
	good := `{"version":"2.1.197","buildDate":"2025-01-01T00:00:00Z","platforms":{
		"linux-x64":{"binary":"claude","checksum":"` + sum + `","size":123},
		"darwin-arm64":{"binary":"claude","checksum":"` + strings.ToUpper(sum) + `","size":5}}}`
	tests := []struct {
		name, in, err string
	}{
		{name: "good", in: good},
		{name: "not json", in: "<html>", err: "not a manifest: invalid character '<' looking for beginning of value"},
		{name: "bad version", in: `{"version":"x","platforms":{}}`, err: `invalid version "x"`},
		{name: "no platforms", in: `{"version":"2.1.1","platforms":{}}`, err: "no platforms"},
		{name: "short checksum", in: `{"version":"2.1.1","platforms":{"linux-x64":{"binary":"claude","checksum":"abcd","size":1}}}`, err: `platform linux-x64: checksum abcd is not a sha256`},
		{name: "zero size", in: `{"version":"2.1.1","platforms":{"linux-x64":{"binary":"claude","checksum":"` + sum + `","size":0}}}`, err: `platform linux-x64: size 0 out of range`},
		{name: "huge size", in: `{"version":"2.1.1","platforms":{"linux-x64":{"binary":"claude","checksum":"` + sum + `","size":99999999999}}}`, err: `platform linux-x64: size 99999999999 out of range`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ParseManifest([]byte(tt.in))
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("ParseManifest() = %v; want error %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b := m.Platforms["darwin-arm64"]; b.Checksum != sum {
				t.Errorf("checksum not lowercased: %q", b.Checksum)
			}
		})
	}
}

func TestBuild(t *testing.T) {
	m, err := ParseManifest([]byte(`{"version":"2.1.197","platforms":{
		"linux-x64":{"binary":"claude","checksum":"` + sum + `","size":123},
		"linux-arm64":{"binary":"../claude","checksum":"` + sum + `","size":123},
		"darwin-arm64":{"binary":"claude","checksum":"` + sum + `","size":5},
		"evil\nname":{"binary":"claude","checksum":"` + sum + `","size":5}}}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, platform, err string
	}{
		{"present", "linux-x64", ""},
		{"missing", "linux-x64-musl", `2.1.197 has no build for linux-x64-musl; 2.1.197 ships: darwin-arm64, "evil\nname", linux-arm64, linux-x64`},
		{"odd binary", "linux-arm64", `the linux-arm64 entry names binary ../claude, want "claude"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := m.Build(tt.platform)
			if tt.err == "" {
				if err != nil || b.Size != 123 {
					t.Fatalf("Build(%s) = %+v, %v", tt.platform, b, err)
				}
				return
			}
			if err == nil || err.Error() != tt.err {
				t.Fatalf("Build(%s) error = %v, want %q", tt.platform, err, tt.err)
			}
		})
	}
}

func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(`{"version":"2.1.197","buildDate":"x","platforms":{"linux-x64":{"binary":"claude","checksum":"` + sum + `","size":123}}}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`<html>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseManifest(b)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error with newline: %q", err)
			}
			return
		}
		if _, err := ParseVersion(m.Version); err != nil {
			t.Fatalf("accepted version %q", m.Version)
		}
		for p, bl := range m.Platforms {
			if len(bl.Checksum) != 64 || strings.ToLower(bl.Checksum) != bl.Checksum || bl.Size <= 0 || bl.Size > MaxBinarySize {
				t.Fatalf("accepted %q: %+v", p, bl)
			}
		}
		if _, err := m.Build("linux-x64-musl"); err != nil && strings.Contains(err.Error(), "\n") {
			t.Fatalf("error with newline: %q", err)
		}
	})
}
