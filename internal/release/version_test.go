package release

import (
	"testing"
)

func TestParseVersion(t *testing.T) {
	tests := []struct {
		name, in string
		want     Version
		ok       bool
	}{
		{"plain", "2.1.197", Version{2, 1, 197, ""}, true},
		{"zeros", "0.0.0", Version{0, 0, 0, ""}, true},
		{"prerelease", "2.1.0-beta.1", Version{2, 1, 0, "beta.1"}, true},
		{"prerelease with hyphen", "2.1.0-rc-1", Version{2, 1, 0, "rc-1"}, true},
		{"empty", "", Version{}, false},
		{"two parts", "2.1", Version{}, false},
		{"four parts", "2.1.1.1", Version{}, false},
		{"leading zero", "2.01.1", Version{}, false},
		{"leading v", "v2.1.1", Version{}, false},
		{"empty prerelease", "2.1.1-", Version{}, false},
		{"slash in prerelease", "2.1.1-a/../../x", Version{}, false},
		{"space in prerelease", "2.1.1-a b", Version{}, false},
		{"newline", "2.1.1\n", Version{}, false},
		{"html", "<html>", Version{}, false},
		{"too many digits", "2.1.1234567890", Version{}, false},
		{"sign", "2.+1.1", Version{}, false},
		{"too long", "2.1.1-" + string(make([]byte, 70)), Version{}, false},
		{"dots only", "2.1.201-..", Version{}, false},
		{"empty identifier", "2.1.1-a..b", Version{}, false},
		{"leading dot", "2.1.1-.a", Version{}, false},
		{"trailing dot", "2.1.1-a.", Version{}, false},
		{"numeric identifier with leading zero", "2.1.1-01", Version{}, false},
		{"zero identifier", "2.1.1-0", Version{2, 1, 1, "0"}, true},
		{"alphanumeric with leading zero", "2.1.1-0a", Version{2, 1, 1, "0a"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseVersion(tt.in)
			if (err == nil) != tt.ok || got != tt.want {
				t.Fatalf("ParseVersion(%q) = %v, %v; want %v, ok=%v", tt.in, got, err, tt.want, tt.ok)
			}
			if tt.ok && got.String() != tt.in {
				t.Errorf("ParseVersion(%q).String() = %q", tt.in, got.String())
			}
		})
	}
}

func TestCompare(t *testing.T) {
	// Each is lower than the next.
	order := []string{"1.9.9", "2.0.0-alpha", "2.0.0-alpha.1", "2.0.0-alpha.beta", "2.0.0-beta", "2.0.0-beta.2", "2.0.0-beta.11", "2.0.0-rc.1", "2.0.0", "2.0.1", "2.1.0", "2.1.89", "2.1.100", "10.0.0"}
	for i := range order {
		for j := range order {
			a, _ := ParseVersion(order[i])
			b, _ := ParseVersion(order[j])
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := a.Compare(b); got != want {
				t.Errorf("%s.Compare(%s) = %d, want %d", a, b, got, want)
			}
		}
	}
}

func TestParseChannel(t *testing.T) {
	tests := []struct {
		name, in, want, err string
	}{
		{name: "trailing newline", in: "2.1.197\n", want: "2.1.197"},
		{name: "spaces", in: "  2.1.197 \r\n", want: "2.1.197"},
		{name: "html", in: "<!DOCTYPE html><html><head><title>Hotel Wi-Fi login</title>", err: `not a version: "<!DOCTYPE html><html><head><title>Hotel "...`},
		{name: "empty", in: "", err: `not a version: ""`},
		{name: "two versions", in: "2.1.1\n2.1.2\n", err: `not a version: "2.1.1\n2.1.2\n"`},
		{name: "plain text", in: "<html>", err: `not a version: <html>`},
		{name: "escape sequence", in: "\x1b[2J\x1b]0;pwned\a2.1.1", err: `not a version: "\x1b[2J\x1b]0;pwned\a2.1.1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := ParseChannel([]byte(tt.in))
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("ParseChannel(%q) = %v, %v; want error %q", tt.in, v, err, tt.err)
				}
				return
			}
			if err != nil || v.String() != tt.want {
				t.Fatalf("ParseChannel(%q) = %v, %v; want %s", tt.in, v, err, tt.want)
			}
		})
	}
}

func TestQuote(t *testing.T) {
	tests := []struct {
		name, in string
		max      int
		want     string
	}{
		{name: "plain", in: "claude", max: 40, want: `claude`},
		{name: "empty", in: "", max: 40, want: `""`},
		{name: "trailing space", in: "2.1.1 ", max: 40, want: `"2.1.1 "`},
		{name: "cut", in: "abcdef", max: 3, want: `abc...`},
		{name: "cut inside a rune", in: "abé", max: 3, want: `ab...`},
		{name: "escape sequence", in: "\x1b[31mred", max: 40, want: `"\x1b[31mred"`},
		{name: "bidi override", in: "a\u202eb", max: 40, want: `"a\u202eb"`},
		{name: "invalid utf-8", in: "a\xffb", max: 40, want: `"a\xffb"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Quote([]byte(tt.in), tt.max); got != tt.want {
				t.Errorf("Quote(%q, %d) = %s, want %s", tt.in, tt.max, got, tt.want)
			}
		})
	}
}

func TestSigned(t *testing.T) {
	for _, tt := range []struct {
		v    string
		want bool
	}{{"2.1.88", false}, {"2.1.89-rc.1", false}, {"2.1.89", true}, {"2.1.100", true}, {"2.2.0", true}, {"1.9.999", false}} {
		v, _ := ParseVersion(tt.v)
		if got := Signed(v); got != tt.want {
			t.Errorf("Signed(%s) = %v, want %v", tt.v, got, tt.want)
		}
	}
}

func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"2.1.197", "2.1.0-beta.1", "0.0.0", "<html>", "2.1", "2.1.1-a/b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVersion(s)
		if err != nil {
			return
		}
		if v.String() != s {
			t.Fatalf("ParseVersion(%q).String() = %q", s, v.String())
		}
		for _, c := range s {
			if c == '/' || c <= ' ' || c > '~' {
				t.Fatalf("ParseVersion(%q) accepted %q", s, c)
			}
		}
		if v.Compare(v) != 0 {
			t.Fatalf("%s.Compare(itself) != 0", v)
		}
		w, _ := ParseVersion("2.1.89")
		if v.Compare(w) != -w.Compare(v) {
			t.Fatalf("Compare not antisymmetric for %s", v)
		}
	})
}

func FuzzParseChannel(f *testing.F) {
	f.Add([]byte("2.1.197\n"))
	f.Add([]byte("<html>"))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := ParseChannel(b)
		if err == nil {
			if _, err := ParseVersion(v.String()); err != nil {
				t.Fatalf("ParseChannel(%q) = %v, which does not parse", b, v)
			}
			return
		}
		for _, c := range err.Error() {
			if c == '\n' {
				t.Fatalf("ParseChannel(%q) error has a newline: %q", b, err)
			}
		}
	})
}
