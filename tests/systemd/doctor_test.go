//go:build linux

package systemd

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil/nspawn"
)

// doctorLine is one check of claude-sandbox doctor --json.
type doctorLine struct {
	Check, Status, Message, Fix string
}

// runDoctor runs claude-sandbox doctor --json in the machine, as user ("" for
// root), and returns its lines by check and whether it exited 0.
func runDoctor(t *testing.T, m *nspawn.Machine, user string) (map[string]doctorLine, bool) {
	t.Helper()
	args := []string{"claude-sandbox", "doctor", "--json", "--dns-name", dnsName}
	var out nspawn.Output
	var err error
	if user == "" {
		out, err = m.Run(context.Background(), args...)
	} else {
		out, err = m.RunAs(context.Background(), user, args...)
	}
	var r struct {
		OK     bool
		Checks []doctorLine
	}
	if jerr := json.Unmarshal([]byte(out.Stdout), &r); jerr != nil {
		t.Fatalf("doctor as %q: %v (stdout %q, stderr %q): %v", user, jerr, out.Stdout, out.Stderr, err)
	}
	if r.OK != (err == nil) {
		t.Errorf("doctor as %q: ok %v, but the exit status says %v", user, r.OK, err)
	}
	lines := map[string]doctorLine{}
	for _, c := range r.Checks {
		lines[c.Check] = c
		t.Logf("as %q: %-4s %-13s %s", user, c.Status, c.Check, c.Message)
	}
	return lines, r.OK
}

// doctorEndToEnd checks claude-sandbox doctor on the installed machine with
// the namespace up: all ok for the user and for root (what each may see),
// and the FAIL line with its fix when the helper loses its setuid bit.
func doctorEndToEnd(t *testing.T, m *nspawn.Machine, user string) {
	// The agent as claude-update lays it out: a versioned binary, the
	// symlink, and its record (SHA-256, size, source) in the state file.
	m.MustRun(t, "sh", "-c", `cd /opt/claude/bin && mv claude claude.1.0.0 && ln -s claude.1.0.0 claude &&
		sum=$(sha256sum claude.1.0.0 | cut -d' ' -f1) && size=$(stat -c %s claude.1.0.0) &&
		printf '{"versions":{"1.0.0":{"sha256":"%s","size":%s,"source":"e2e"}},"highest":"1.0.0"}\n' "$sum" "$size" >.claude-update.state`)

	lines, ok := runDoctor(t, m, user)
	for name, l := range lines {
		want := "ok"
		if name == "firewall" { // nftables is root's to see
			want = "skip"
		}
		if l.Status != want {
			t.Errorf("doctor as %s: %s = %s %q (fix %q), want %s", user, name, l.Status, l.Message, l.Fix, want)
		}
	}
	if !ok || len(lines) != 21 {
		t.Errorf("doctor as %s: ok %v, %d lines", user, ok, len(lines))
	}

	lines, ok = runDoctor(t, m, "")
	for name, l := range lines {
		want := "ok"
		switch name {
		case "user":
			want = "warn"
		case "sandbox-probe", "systemd-user", "agent-slice", "budget", "sandbox-homes", "whitelist", "toolchains":
			want = "skip"
		}
		if l.Status != want {
			t.Errorf("doctor as root: %s = %s %q (fix %q), want %s", name, l.Status, l.Message, l.Fix, want)
		}
	}
	if !ok {
		t.Error("doctor as root: not ok")
	}

	m.MustRun(t, "chmod", "0755", "/usr/local/bin/netns-enter")
	lines, ok = runDoctor(t, m, user)
	m.MustRun(t, "chmod", "4755", "/usr/local/bin/netns-enter")
	l := lines["netns-enter"]
	if ok || l.Status != "FAIL" || l.Fix != "sudo chmod 4755 /usr/local/bin/netns-enter" {
		t.Errorf("doctor with netns-enter not setuid: ok %v, netns-enter %+v", ok, l)
	}
}
