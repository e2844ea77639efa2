package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// RootDir returns a fresh directory /run/claude-sbx-XXXXXXXX, root:root
// 0755, removed when the test ends: a root-only place (unlike /tmp, whose
// 1777 parent netns-enter refuses) for configuration that privileged code
// checks, such as the netns-enter whitelist.
func RootDir(t testing.TB) string {
	t.Helper()
	RequireRoot(t)
	dir := filepath.Join("/run", UniqueName("claude-sbx-", 19))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// SetuidNetnsEnter builds the multicall binary with its whitelist in
// sysconfdir (-X buildinfo.Sysconfdir) and netns-enter's entry point,
// restricted to netns-enter
// (-tags netnsenter_only) unless full, and installs it as a setuid-root copy
// (root:root 4755) named netns-enter in a fresh PublicDir. It returns the
// copy's path.
func SetuidNetnsEnter(t testing.TB, sysconfdir string, full bool) string {
	t.Helper()
	RequireRoot(t)
	dir := PublicDir(t)
	var sfs syscall.Statfs_t
	if err := syscall.Statfs(dir, &sfs); err != nil {
		t.Fatal(err)
	}
	const stNosuid = 0x2
	if sfs.Flags&stNosuid != 0 {
		Missing(t, "%s is on a nosuid mount: cannot test a setuid binary there", dir)
	}
	bin := filepath.Join(dir, "netns-enter")
	// -E: netns-enter's own entry point (applets/netns-enter/entry_linux.go),
	// as the Makefile links it.
	args := []string{"build", "-trimpath", "-o", bin,
		"-ldflags", "-E=_netnsenter_rt0 -X github.com/claude-sandbox/claude-sandbox/internal/buildinfo.Sysconfdir=" + sysconfdir}
	if !full {
		args = append(args, "-tags", "netnsenter_only")
	}
	cmd := exec.Command("go", append(args, "./cmd/multicall")...)
	cmd.Dir = ModuleRoot(t)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %q: %v: %s", args, err, out)
	}
	if err := os.Chown(bin, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Chmod(bin, 0o4755); err != nil { // os.Chmod would drop the bit without os.ModeSetuid
		t.Fatal(err)
	}
	return bin
}
