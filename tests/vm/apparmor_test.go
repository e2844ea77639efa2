//go:build linux

package vm

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil/vm"
)

// TestGuestAppArmor: the profile make install installs for bwrap
// (install/apparmor), loaded into the guest kernel's AppArmor with an
// AppArmor 4 parser, confines bwrap and, stacked, what bwrap runs; the
// sandbox starts under it.
func TestGuestAppArmor(t *testing.T) {
	vm.InGuest(t)
	setupUser(t)
	if b, err := os.ReadFile("/sys/module/apparmor/parameters/enabled"); err != nil || strings.TrimSpace(string(b)) != "Y" {
		testutil.Missing(t, "AppArmor is not enabled in the guest's kernel (/sys/module/apparmor/parameters/enabled: %q, %v)", b, err)
	}
	const profiles = "/sys/kernel/security/apparmor/profiles"
	if _, err := os.Stat(profiles); err != nil {
		testutil.Missing(t, "no AppArmor policy interface: %v", err)
	}
	// Debian 12's parser knows neither abi/4.0 nor the userns rule.
	parser := os.Getenv("CLAUDE_SBX_APPARMOR4_PARSER")
	if parser == "" {
		cache := os.Getenv("CLAUDE_SBX_AGENT_CACHE")
		if cache == "" {
			cache = "/var/cache/claude-sandbox-tests"
		}
		parser = filepath.Join(cache, "apparmor4", "apparmor_parser")
	}
	if _, err := os.Stat(parser); err != nil {
		testutil.Missing(t, "an AppArmor 4 parser at %s (run scripts/fetch-apparmor4 as root on the host)", parser)
	}
	tmpl, err := os.ReadFile(filepath.Join(testutil.ModuleRoot(t), "install", "apparmor", bwrap.AppArmorProfileName))
	if err != nil {
		t.Fatal(err)
	}
	// as make install renders and installs it
	writeFile(t, bwrap.AppArmorProfilePath, strings.ReplaceAll(string(tmpl), "@BWRAP@", bwrap.DefaultPath))
	if out, err := exec.Command(parser, "-r", bwrap.AppArmorProfilePath).CombinedOutput(); err != nil {
		t.Fatalf("%s -r %s: %v\n%s", parser, bwrap.AppArmorProfilePath, err, out)
	} else if len(out) > 0 {
		t.Logf("apparmor_parser -r: %s", out)
	}
	defer exec.Command(parser, "-R", bwrap.AppArmorProfilePath).Run()
	loaded, err := os.ReadFile(profiles)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"claude-sandbox-bwrap (enforce)", "claude-sandbox-bwrap-child (enforce)"} {
		if !strings.Contains(string(loaded), p+"\n") {
			t.Errorf("%s lacks %q:\n%s", profiles, p, loaded)
		}
	}
	if _, err := os.Stat("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); err != nil {
		t.Logf("this kernel does not restrict user namespaces (%v): the profile is loaded, not needed", err)
	}
	proj := filepath.Join("/home", guestUser, "aaproj")
	run(t, "runuser", "-u", guestUser, "--", "mkdir", "-p", proj)
	writeFile(t, filepath.Join("/home", guestUser, ".claude-sandbox-init"), "")
	// The sandbox's shell runs in the child profile stacked on bwrap's.
	out, err := asUser(proj, "claude", "--sandbox-network=host", "--shell", "-c", "cat /proc/self/attr/current; echo; echo sandboxed").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "sandboxed") {
		t.Fatalf("claude --shell with the profile loaded: %v\n%s", err, out)
	}
	t.Logf("the sandbox's shell: %q", out)
	if !strings.Contains(string(out), "claude-sandbox-bwrap-child") {
		t.Errorf("the sandbox's shell runs under %q, want the stack with claude-sandbox-bwrap-child", out)
	}
}
