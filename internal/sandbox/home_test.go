package sandbox

import (
	"strings"
	"testing"
)

func TestProjectHomeName(t *testing.T) {
	tests := []struct {
		name     string
		dir      string
		dev, ino uint64
		prefix   string
	}{
		{"plain", "/home/u/src/x", 1, 2, "x-"},
		{"escapes", "/home/u/src/a\x1b]0;t\x07 b", 1, 2, "a__0_t__b-"},
		{"dot", "/home/u/src/.x", 1, 2, "_.x-"},
		{"root", "/", 1, 2, "_-"},
		{"long", "/h/" + strings.Repeat("y", 40), 1, 2, strings.Repeat("y", 32) + "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ProjectHomeName(tt.dir, tt.dev, tt.ino)
			if !strings.HasPrefix(got, tt.prefix) || len(got) != len(tt.prefix)+16 {
				t.Errorf("ProjectHomeName(%q) = %q, want %q and 16 hex digits", tt.dir, got, tt.prefix)
			}
		})
	}
	a, b := ProjectHomeName("/h/x", 1, 2), ProjectHomeName("/h/x", 1, 3)
	if a == b {
		t.Errorf("ProjectHomeName of a project made again (new inode) = %q, the old one's", a)
	}
}

func TestGoldenHomes(t *testing.T) {
	tests := []struct{ name, config string }{
		{"project", ""},
		{"shared", "home shared"},
		{"shared-under", "home shared\nif pwd-under ~/projects\n  home project\nend"},
		{"cache-shared", "cache shared"},
		{"cache-project", "cache shared\nif pwd-under ~/projects\n  cache project\nend"},
		{"cache-shared-home-shared", "home shared\ncache shared"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := debianHost()
			h.files["/home/u/.claude-homes"] = "d"
			h.files["/home/u/.claude-homes/common"] = "d"
			h.files["/home/u/.claude-homes/common/settings.json"] = "f"
			h.files["/home/u/.claude-homes/common/commands"] = "d"
			s := baseSpec()
			s.Homes = "/home/u/.claude-homes"
			s.Config = parseConfig(t, s, tt.config)
			golden(t, "home-"+tt.name, dryRun(t, h, s))
		})
	}
}

// A symlink the project's agent left in its home would have bwrap make the
// login's mount point through it, on the host.
func TestHomeMountPointsNotThroughLinks(t *testing.T) {
	h := debianHost()
	s := baseSpec()
	s.Homes = "/home/u/.claude-homes"
	home := "/home/u/.claude-homes/" + ProjectHomeName("/home/u/projects/p", 0, 0)
	h.files["/home/u/.claude-homes"] = "d"
	h.files[home] = "d"
	h.files[home+"/.claude"] = "/home/u/.ssh"
	_, err := Build(h, s)
	want := "sandbox home: " + home + "/.claude is a symlink in " + home + ", which the sandbox can write"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("Build = %v, want %s...", err, want)
	}
}

// A symlink the project's agent left in its home would have bwrap make a
// shared cache's mount point through it, on the host.
func TestCacheMountPointsNotThroughLinks(t *testing.T) {
	h := debianHost()
	s := baseSpec()
	s.Homes = "/home/u/.claude-homes"
	s.Config = parseConfig(t, s, "cache shared")
	home := "/home/u/.claude-homes/" + ProjectHomeName("/home/u/projects/p", 0, 0)
	h.files["/home/u/.claude-homes"] = "d"
	h.files[home] = "d"
	h.files[home+"/go"] = "/home/u/.ssh"
	_, err := Build(h, s)
	want := "cache shared: " + home + "/go is a symlink in " + home + ", which the sandbox can write"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("Build = %v, want %s...", err, want)
	}
}
