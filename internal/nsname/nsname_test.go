package nsname

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var reference = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,14}$`)

func TestValid(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{"default", "agents", true},
		{"one char", "a", true},
		{"digit first", "0a", true},
		{"max length", strings.Repeat("a", 15), true},
		{"dash and underscore", "a-b_c", true},
		{"empty", "", false},
		{"too long", strings.Repeat("a", 16), false},
		{"300 chars", strings.Repeat("a", 300), false},
		{"dot dot", "..", false},
		{"dot", ".", false},
		{"path", "../../proc/1/ns/net", false},
		{"slash", "a/b", false},
		{"dash first", "-a", false},
		{"underscore first", "_a", false},
		{"upper", "Agents", false},
		{"unicode", "agénts", false},
		{"trailing cr", "agents\r", false},
		{"trailing newline", "agents\n", false},
		{"space", "a b", false},
		{"nul", "a\x00", false},
		{"at", "a@b", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Valid(tt.in); got != tt.want {
				t.Errorf("Valid(%q) = %v, want %v", tt.in, got, tt.want)
			}
			err := Check(tt.in)
			if (err == nil) != tt.want {
				t.Errorf("Check(%q) = %v, want valid=%v", tt.in, err, tt.want)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Errorf("Check(%q) = %v, want wrapping ErrInvalid", tt.in, err)
			}
			if got := reference.MatchString(tt.in); got != tt.want {
				t.Fatalf("test table disagrees with the regexp for %q", tt.in)
			}
		})
	}
}

func TestCheckMessage(t *testing.T) {
	got := Check("a/b").Error()
	want := `invalid namespace name "a/b": use 1 to 15 characters of a-z, 0-9, '-' or '_', starting with a letter or digit`
	if got != want {
		t.Errorf("Check(%q) = %q, want %q", "a/b", got, want)
	}
	if long := Check(strings.Repeat("x", 300)).Error(); strings.Count(long, "x") > 70 || strings.Contains(long, "\n") {
		t.Errorf("Check(300 x) = %q, want it shortened to one line", long)
	}
	if cr := Check("agents\r\n").Error(); strings.ContainsAny(cr, "\r\n") {
		t.Errorf("Check(agents CR LF) = %q, want control bytes quoted", cr)
	}
}

func FuzzValid(f *testing.F) {
	for _, s := range []string{"agents", "", "..", "a/b", "A", "a-", "-a", strings.Repeat("z", 16), "é", "a\r"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := reference.MatchString(s)
		if got := Valid(s); got != want {
			t.Fatalf("Valid(%q) = %v, want %v", s, got, want)
		}
		err := Check(s)
		if (err == nil) != want {
			t.Fatalf("Check(%q) = %v, want valid=%v", s, err, want)
		}
		if err != nil && strings.ContainsAny(err.Error(), "\r\n\x00") {
			t.Fatalf("Check(%q) message has control bytes: %q", s, err.Error())
		}
	})
}

func TestForUser(t *testing.T) {
	for _, tc := range []struct {
		name, base string
		uid        int
		mine       []string
		want       string
	}{
		{"own listed", "agents", 1000, []string{"agents-1000"}, "agents-1000"},
		{"own not listed", "agents", 1000, []string{"agents-1001"}, "agents"},
		{"own too long", "agents-of-chaos", 1000, []string{"agents-of-chaos-1000"}, "agents-of-chaos"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ForUser(tc.base, tc.uid, func(n string) bool { return slices.Contains(tc.mine, n) })
			if got != tc.want {
				t.Errorf("ForUser(%q, %d) = %q, want %q", tc.base, tc.uid, got, tc.want)
			}
		})
	}
}
