// Package apparmor holds the AppArmor profile that `make install` installs
// for bwrap (claude-sandbox-bwrap); its test parses it with apparmor_parser.
package apparmor

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// render does what `make install` does to the template.
func render(t *testing.T, bwrapPath string) string {
	t.Helper()
	b, err := os.ReadFile(bwrap.AppArmorProfileName)
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), "@BWRAP@", bwrapPath)
}

// TestProfileShape checks what the profile must say, on any machine.
func TestProfileShape(t *testing.T) {
	p := render(t, "/usr/bin/bwrap")
	for _, want := range []string{
		"abi <abi/4.0>,",
		"profile claude-sandbox-bwrap /usr/bin/bwrap flags=(attach_disconnected) {",
		"allow px /** -> claude-sandbox-bwrap//&claude-sandbox-bwrap-child,",
		"profile claude-sandbox-bwrap-child flags=(attach_disconnected) {",
		"audit deny capability,",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("profile lacks %q", want)
		}
	}
	// bwrap itself may use user namespaces; that is the point.
	bw := p[strings.Index(p, "profile claude-sandbox-bwrap "):strings.Index(p, "profile claude-sandbox-bwrap-child")]
	if !regexp.MustCompile(`(?m)^\s*allow userns,$`).MatchString(bw) {
		t.Error("the bwrap profile does not allow userns")
	}
	// Children must never get capabilities: nothing in the child profile
	// allows one.
	child := p[strings.Index(p, "profile claude-sandbox-bwrap-child"):]
	if regexp.MustCompile(`(?m)^\s*(allow )?capability`).MatchString(child) {
		t.Error("the child profile allows a capability")
	}
	if got := strings.Count(p, "@BWRAP@"); got != 0 {
		t.Errorf("%d @BWRAP@ left after rendering", got)
	}
	if bwrap.AppArmorProfilePath != "/etc/apparmor.d/"+bwrap.AppArmorProfileName {
		t.Errorf("AppArmorProfilePath = %q", bwrap.AppArmorProfilePath)
	}
}

// apparmor3Only are the rules AppArmor 3 parsers (Debian 12) do not know;
// the rest of the profile must parse there too.
var apparmor3Only = regexp.MustCompile(`(?m)^\s*allow (userns|io_uring|mqueue),\n`)

// TestProfileParses runs apparmor_parser -Q -K (parse and compile, load
// nothing, no cache). A parser with abi/4.0 parses the profile as
// installed; an AppArmor 3 parser (Debian 12's) parses it with abi/3.0 and
// without the three rules it does not know, which the shape test covers.
func TestProfileParses(t *testing.T) {
	parser, err := exec.LookPath("apparmor_parser")
	if err != nil {
		testutil.Missing(t, "apparmor_parser (Debian package apparmor)")
	}
	p := render(t, "/usr/bin/bwrap")
	v4 := false
	if _, err := os.Stat("/etc/apparmor.d/abi/4.0"); err == nil {
		v4 = true
	} else {
		t.Log("AppArmor 3 parser: checking the profile less the AppArmor 4 rules")
		p = strings.Replace(p, "abi <abi/4.0>,", "abi <abi/3.0>,", 1)
		p = apparmor3Only.ReplaceAllString(p, "")
	}
	parse := func(text string) (string, error) {
		f := filepath.Join(t.TempDir(), bwrap.AppArmorProfileName)
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		cmd := exec.Command(parser, "-Q", "-K", f)
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	if out, err := parse(p); err != nil {
		t.Fatalf("apparmor_parser -Q -K (AppArmor 4 %v): %v\n%s", v4, err, out)
	}
	// The parser does reject a broken profile (so the pass above means
	// something).
	broken := strings.Replace(p, "audit deny capability,", "audit deny capability", 1)
	if out, err := parse(broken); err == nil {
		t.Fatalf("apparmor_parser accepted a profile with a missing comma:\n%s", out)
	}
}

// TestProfileParsesAppArmor4 parses the profile as installed, abi/4.0 and
// the userns rule included, with an AppArmor 4 parser: Debian 13's, which
// scripts/fetch-apparmor4 unpacks into the test cache (make check runs it).
func TestProfileParsesAppArmor4(t *testing.T) {
	parser := os.Getenv("CLAUDE_SBX_APPARMOR4_PARSER")
	if parser == "" {
		cache := os.Getenv("CLAUDE_SBX_AGENT_CACHE")
		if cache == "" {
			cache = "/var/cache/claude-sandbox-tests"
		}
		parser = filepath.Join(cache, "apparmor4", "apparmor_parser")
	}
	if _, err := os.Stat(parser); err != nil {
		testutil.Missing(t, "an AppArmor 4 parser at %s (run scripts/fetch-apparmor4 as root)", parser)
	}
	parse := func(text string) (string, error) {
		f := filepath.Join(t.TempDir(), bwrap.AppArmorProfileName)
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(parser, "-Q", "-K", f).CombinedOutput()
		return string(out), err
	}
	if out, err := parse(render(t, "/usr/bin/bwrap")); err != nil {
		t.Fatalf("apparmor_parser 4 -Q -K: %v\n%s", err, out)
	}
	// Controls: the parser rejects what is wrong, so the pass above means
	// something: the template before make install fills in bwrap's path,
	// and an unknown rule.
	raw, err := os.ReadFile(bwrap.AppArmorProfileName)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := parse(string(raw)); err == nil || !strings.Contains(out, "Profile attachment must begin with a '/' or variable") {
		t.Errorf("apparmor_parser 4 on the unrendered template: %v, %q; want the attachment error", err, out)
	}
	bad := strings.Replace(render(t, "/usr/bin/bwrap"), "allow userns,", "allow usernamespace,", 1)
	if out, err := parse(bad); err == nil {
		t.Errorf("apparmor_parser 4 accepted an unknown rule:\n%s", out)
	}
}
