package netpolicy

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

func TestLoadConfig(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", "allow 192.168.1.10 tcp 3128\n", 0o644)
	c, err := LoadConfig(good)
	if err != nil || len(c.Allow) != 1 {
		t.Fatalf("LoadConfig(good) = %v, %v", c, err)
	}
	if c, err := LoadConfig(filepath.Join(dir, "missing")); err != nil || len(c.Allow) != 0 {
		t.Fatalf("LoadConfig(missing) = %v, %v; want empty, nil", c, err)
	}
	if _, err := LoadConfig(write("rootgroup", "", 0o664)); err != nil {
		t.Fatalf("LoadConfig(group root writable) = %v", err)
	}

	userOwned := write("user", "", 0o644)
	os.Chown(userOwned, 4242, 4242)
	groupW := write("groupw", "", 0o664)
	os.Chown(groupW, 0, 4242)
	worldW := write("worldw", "", 0o646)
	link := filepath.Join(dir, "link")
	os.Symlink(good, link)
	fifo := filepath.Join(dir, "fifo")
	syscall.Mkfifo(fifo, 0o644)
	big := write("big", strings.Repeat("#\n", 1<<19+1), 0o644)
	bad := write("bad", "allow 192.168.1.10\nallow 1.2.3.4/8\n", 0o644)
	opendir := filepath.Join(dir, "open")
	os.Mkdir(opendir, 0o777)
	os.Chmod(opendir, 0o777)
	inOpen := filepath.Join(opendir, "conf")
	os.WriteFile(inOpen, nil, 0o644)
	sticky := filepath.Join(dir, "sticky")
	os.Mkdir(sticky, 0o777)
	syscall.Chmod(sticky, 0o1777)
	inSticky := filepath.Join(sticky, "conf")
	os.WriteFile(inSticky, []byte("allow 1.2.3.4\n"), 0o644)

	tests := []struct {
		name, path, want string
	}{
		{"user owned", userOwned, userOwned + ": owned by uid 4242, not root: chown root:root " + userOwned},
		{"group writable", groupW, groupW + ": writable by group or others (mode 0664): chmod go-w " + groupW},
		{"world writable", worldW, worldW + ": writable by group or others (mode 0646): chmod go-w " + worldW},
		{"symlink", link, link + ": is a symlink: make it a regular file owned by root"},
		{"fifo", fifo, fifo + ": not a regular file"},
		{"huge", big, big + ": 1048578 bytes, larger than 1048576"},
		{"parse error", bad, bad + ":2: allow: 1.2.3.4/8 has host bits set: write 1.0.0.0/8"},
		{"world writable dir", inOpen, inOpen + ": " + opendir + ": writable by group or others (mode 0777): chmod go-w " + opendir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadConfig(tt.path)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("LoadConfig error = %v, want %q", err, tt.want)
			}
		})
	}
	if c, err := LoadConfig(inSticky); err != nil || len(c.Allow) != 1 {
		t.Fatalf("LoadConfig(in sticky dir) = %v, %v", c, err)
	}
}
