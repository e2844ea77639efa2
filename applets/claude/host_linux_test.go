package claude

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// What ReadFile reads may lie where the sandbox writes: a symlink there
// is not followed, and a FIFO or device neither blocks nor streams forever.
func TestHostReadFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("gitdir: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(file, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero")); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, want string }{
		{"file", ""},
		{"link", "open " + dir + "/link: too many levels of symbolic links"},
		{"fifo", "read " + dir + "/fifo: not a regular file"},
		{"zero", "open " + dir + "/zero: too many levels of symbolic links"},
		{"missing", "open " + dir + "/missing: no such file or directory"},
	}
	for _, tt := range tests {
		b, err := osHost{}.ReadFile(filepath.Join(dir, tt.name), 1<<20)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("ReadFile(%s) error = %q, want %q", tt.name, got, tt.want)
		}
		if tt.want == "" && string(b) != "gitdir: x\n" {
			t.Errorf("ReadFile(%s) = %q", tt.name, b)
		}
	}
	if _, err := (osHost{}).ReadFile("/dev/zero", 1<<20); err == nil || err.Error() != "read /dev/zero: not a regular file" {
		t.Errorf("ReadFile(/dev/zero) error = %v, want not a regular file", err)
	}
}

func TestGitSafeToFetch(t *testing.T) {
	for _, tt := range []struct {
		v    string
		want bool
	}{
		{"git version 2.39.5", true}, {"git version 2.39.4", true}, {"git version 2.39.3", false},
		{"git version 2.38.9", false}, {"git version 2.40.1", false}, {"git version 2.40.2", true},
		{"git version 2.43.3", false}, {"git version 2.43.4", true}, {"git version 2.45.0", false},
		{"git version 2.45.1", true}, {"git version 2.47.0", true}, {"git version 3.0.0", true},
		{"git version 1.9.9", false}, {"git version 2.45.1.windows.1", true}, {"git version 2.46", false},
		{"git version x", false}, {"", false}, {"hub version 2.45.1", false},
	} {
		if got := gitSafeToFetch(tt.v); got != tt.want {
			t.Errorf("gitSafeToFetch(%q) = %v, want %v", tt.v, got, tt.want)
		}
	}
}
