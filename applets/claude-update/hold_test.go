package claudeupdate

import (
	"testing"
)

// TestHold: after a rollback or an install by name, --hold keeps channel
// runs from moving on; they report and skip until --unhold.
func TestHold(t *testing.T) {
	f := newFixture(t)
	f.release("2.1.95")
	f.release("2.1.100")
	f.channel("latest", "2.1.100")
	f.mustRun("2.1.95")
	if out := f.mustRun("--hold"); out != "held at 2.1.95: channel runs report and skip until claude-update --unhold\n" {
		t.Errorf("--hold = %q", out)
	}
	before := f.snapshot()
	if out := f.mustRun(); out != "held at 2.1.95 (latest is 2.1.100); not updating: claude-update --unhold to follow latest again\n" {
		t.Errorf("held run = %q", out)
	}
	out, code, _ := f.runCode("--check")
	if want := "held at 2.1.95 (latest is 2.1.100); claude-update --unhold to follow latest\n"; code != 0 || out != want {
		t.Errorf("held --check = %d, %q; want 0, %q", code, out, want)
	}
	f.assertUnchanged(before)
	if out := f.mustRun("--list"); out != "* 2.1.95 (current)\nheld at 2.1.95: channel runs skip; claude-update --unhold releases it\n" {
		t.Errorf("--list = %q", out)
	}
	// A version by name still installs, and says the hold stays.
	out = f.mustRun("2.1.100")
	if want := "installed 2.1.100 (previous: 2.1.95)\nnote: held at 2.1.95; channel runs skip until claude-update --unhold\n"; len(out) < len(want) || out[len(out)-len(want):] != want {
		t.Errorf("install by name while held = %q", out)
	}
	if out := f.mustRun("--hold", "2.1.100"); out != "held at 2.1.100: channel runs report and skip until claude-update --unhold\n" {
		t.Errorf("--hold 2.1.100 = %q", out)
	}
	if out := f.mustRun("--unhold"); out != "released the hold on 2.1.100; channel runs update again\n" {
		t.Errorf("--unhold = %q", out)
	}
	if out := f.mustRun("--unhold"); out != "nothing is held\n" {
		t.Errorf("second --unhold = %q", out)
	}
	f.channel("latest", "2.1.101")
	f.release("2.1.101")
	f.mustRun()
	if f.current() != "claude.2.1.101" {
		t.Errorf("after --unhold: claude -> %s", f.current())
	}
}

func TestHoldErrors(t *testing.T) {
	f := newFixture(t)
	_, msg := f.run("--hold")
	if want := "nothing is installed in " + f.dir + " to hold: name a version (claude-update --hold 2.1.197)"; msg != want {
		t.Errorf("--hold with nothing installed: %q, want %q", msg, want)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--hold", "latest"}, "--hold takes a version such as 2.1.197 (or none, for the current one), not a channel"},
		{[]string{"--unhold", "2.1.1"}, "--unhold takes no channel or version"},
		{[]string{"--hold", "--unhold"}, "--hold and --unhold can't be used together (see --help)"},
		{[]string{"--allow-unsigned"}, "--allow-unsigned applies to a version given by name (such as 2.1.50), never to a channel"},
		{[]string{"--allow-unsigned", "stable"}, "--allow-unsigned applies to a version given by name (such as 2.1.50), never to a channel"},
		{[]string{"--timeout", "0s"}, "--timeout must be positive"},
	}
	for _, tt := range tests {
		_, err := f.runErr(tt.args...)
		if cliCode(err) != 2 || err.Error() != tt.want {
			t.Errorf("claude-update %q = %d %v; want 2 %q", tt.args, cliCode(err), err, tt.want)
		}
	}
}
