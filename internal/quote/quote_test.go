package quote

import "testing"

func TestString(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"plain path", "/home/alice/src/project", "/home/alice/src/project"},
		{"spaces and unicode", "/home/alice/Mes projets/été", "/home/alice/Mes projets/été"},
		{"empty", "", ""},
		{"escape sequence", "a\x1b]0;title\x07b", `"a\x1b]0;title\ab"`},
		{"newline forges a line", "x\nclaude: all good", `"x\nclaude: all good"`},
		{"carriage return", "x\rY", `"x\rY"`},
		{"C1 control", "a\u009bb", `"a\u009bb"`},
		{"bidi override", "a\u202eb", `"a\u202eb"`},
		{"invalid utf-8", "a\xffb", `"a\xffb"`},
		{"DEL", "a\x7fb", `"a\x7fb"`},
		{"quote in a safe name", `a"b`, `a"b`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := String(tc.in); got != tc.want {
				t.Errorf("String(%q) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

func FuzzString(f *testing.F) {
	f.Add("plain")
	f.Add("\x1b[2J")
	f.Add("\xff\xfe")
	f.Fuzz(func(t *testing.T, s string) {
		out := String(s)
		for _, b := range []byte(out) {
			if b < 0x20 || b == 0x7f {
				t.Fatalf("String(%q) = %q holds control byte %#x", s, out, b)
			}
		}
		if !Safe(out) {
			t.Fatalf("String(%q) = %q is not safe to print", s, out)
		}
	})
}
