package netnsenter

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,14}$`)

func validName(s string) bool { return nameRE.MatchString(s) }

func TestParseWhitelist(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []entry
		wantErr string
	}{
		{name: "empty", in: "", want: nil},
		{name: "default", in: "agents\n", want: []entry{{Name: "agents", Line: 1}}},
		{name: "no final newline", in: "agents", want: []entry{{Name: "agents", Line: 1}}},
		{name: "comments and blanks", in: "# names\n\n  agents  # the default\n\tother\t@sandbox\n", want: []entry{{Name: "agents", Line: 3}, {Name: "other", Group: "sandbox", Line: 4}}},
		{name: "group", in: "agents @sandbox", want: []entry{{Name: "agents", Group: "sandbox", Line: 1}}},
		{name: "samba-style group", in: "a @Domain.Users$", want: []entry{{Name: "a", Group: "Domain.Users$", Line: 1}}},
		{name: "crlf", in: "agents\r\n", wantErr: `1: invalid namespace name "agents\r": use 1 to 15 characters of a-z, 0-9, '-' or '_', starting with a letter or digit`},
		{name: "upper", in: "ok\nAgents\n", wantErr: `2: invalid namespace name "Agents": use 1 to 15 characters of a-z, 0-9, '-' or '_', starting with a letter or digit`},
		{name: "path", in: "../x", wantErr: `1: invalid namespace name "../x": use 1 to 15 characters of a-z, 0-9, '-' or '_', starting with a letter or digit`},
		{name: "three fields", in: "a @b c", wantErr: "1: want NAME or NAME @GROUP, got 3 fields"},
		{name: "group without at", in: "a sandbox", wantErr: `1: "sandbox" is not @GROUP (a group name from /etc/group)`},
		{name: "empty group", in: "a @", wantErr: `1: "@" is not @GROUP (a group name from /etc/group)`},
		{name: "group with colon", in: "a @x:y", wantErr: `1: "@x:y" is not @GROUP (a group name from /etc/group)`},
		{name: "group dash first", in: "a @-x", wantErr: `1: "@-x" is not @GROUP (a group name from /etc/group)`},
		{name: "duplicate", in: "a\nb\na @g\n", wantErr: "3: a is already listed on line 1"},
		{name: "nul", in: "a\x00", wantErr: `1: invalid namespace name "a\x00": use 1 to 15 characters of a-z, 0-9, '-' or '_', starting with a letter or digit`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseWhitelist([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("parseWhitelist(%q) = %v, %v; want error %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseWhitelist(%q) = %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("parseWhitelist(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestFind(t *testing.T) {
	entries, err := parseWhitelist([]byte("agents\nagents2 @g\n"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		in    string
		want  entry
		found bool
	}{
		{"exact", "agents", entry{Name: "agents", Line: 1}, true},
		{"with group", "agents2", entry{Name: "agents2", Group: "g", Line: 2}, true},
		{"prefix is not a match", "agent", entry{}, false},
		{"longer is not a match", "agents23", entry{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, found := find(entries, tt.in)
			if got != tt.want || found != tt.found {
				t.Errorf("find(%q) = %+v, %v; want %+v, %v", tt.in, got, found, tt.want, tt.found)
			}
		})
	}
}

func TestLookupGroup(t *testing.T) {
	const group = "root:x:0:\nsandbox:x:1234:alice,bob\nbroken:x:abc:\nsandbox:x:99:\nhuge:x:4294967295:\n"
	tests := []struct {
		name    string
		in      string
		want    uint32
		wantErr string
	}{
		{"found", "sandbox", 1234, ""},
		{"root", "root", 0, ""},
		{"missing", "nope", 0, "no such group"},
		{"prefix", "sand", 0, "no such group"},
		{"bad gid", "broken", 0, `3: group broken has an invalid gid "abc"`},
		{"gid -1", "huge", 0, `5: group huge has an invalid gid "4294967295"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := lookupGroup([]byte(group), tt.in)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("lookupGroup(%q) = %d, %v; want error %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("lookupGroup(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestMember(t *testing.T) {
	tests := []struct {
		name   string
		gid    uint32
		rgid   uint32
		groups []uint32
		want   bool
	}{
		{"real gid", 5, 5, nil, true},
		{"supplementary", 5, 1, []uint32{3, 5}, true},
		{"neither", 5, 1, []uint32{3, 4}, false},
		{"no groups", 5, 1, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := member(tt.gid, tt.rgid, tt.groups); got != tt.want {
				t.Errorf("member(%d, %d, %v) = %v, want %v", tt.gid, tt.rgid, tt.groups, got, tt.want)
			}
		})
	}
}

func FuzzParseWhitelist(f *testing.F) {
	for _, s := range []string{"agents\n", "# c\n a @g # x\n", "a\na\n", "a @b c", "A", "a\r\n", "a @"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		entries, err := parseWhitelist([]byte(s))
		if err != nil {
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("parseWhitelist(%q) error is not one line: %q", s, err)
			}
			return
		}
		lines := strings.Split(s, "\n")
		seen := map[string]bool{}
		for _, e := range entries {
			if !validName(e.Name) {
				t.Fatalf("parseWhitelist(%q) accepted name %q", s, e.Name)
			}
			if seen[e.Name] {
				t.Fatalf("parseWhitelist(%q) accepted %q twice", s, e.Name)
			}
			seen[e.Name] = true
			if e.Group != "" && !validGroupName(e.Group) || strings.ContainsAny(e.Group, ":\n\x00 ") {
				t.Fatalf("parseWhitelist(%q) accepted group %q", s, e.Group)
			}
			// The entry is the whole (uncommented) line, exactly.
			line := lines[e.Line-1]
			if i := strings.IndexByte(line, '#'); i >= 0 {
				line = line[:i]
			}
			want := e.Name
			if e.Group != "" {
				want += " @" + e.Group
			}
			if got := strings.Join(strings.Fields(line), " "); got != want {
				t.Fatalf("parseWhitelist(%q): line %d %q gave entry %+v", s, e.Line, line, e)
			}
		}
	})
}

func FuzzLookupGroup(f *testing.F) {
	f.Add("root:x:0:\nsandbox:x:1234:a,b\n", "sandbox")
	f.Add("a:x:-1:\n", "a")
	f.Fuzz(func(t *testing.T, data, name string) {
		gid, err := lookupGroup([]byte(data), name)
		if err != nil {
			return
		}
		for _, line := range strings.Split(data, "\n") {
			f := strings.Split(line, ":")
			if len(f) == 4 && f[0] == name {
				if gid == 1<<32-1 {
					t.Fatalf("lookupGroup accepted gid -1")
				}
				return
			}
		}
		t.Fatalf("lookupGroup(%q, %q) = %d without a matching line", data, name, gid)
	})
}
