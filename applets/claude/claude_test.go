package claude

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
)

func TestParseArgs(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		want  options
		usage string // substring of a usage error
	}{
		{"none", []string{}, options{args: []string{}}, ""},
		{"agent args verbatim", []string{"-p", "--sandbox-dry-run", ""}, options{args: []string{"-p", "--sandbox-dry-run", ""}}, ""},
		{"shell", []string{"--shell", "-c", "ls"}, options{shell: true, args: []string{"-c", "ls"}}, ""},
		{"shell ends our flags", []string{"--shell", "--sandbox-dry-run"}, options{shell: true, args: []string{"--sandbox-dry-run"}}, ""},
		{"dry run", []string{"--sandbox-dry-run", "--shell", "-c", "true"}, options{mode: modeDryRun, shell: true, args: []string{"-c", "true"}}, ""},
		{"dry run agent", []string{"--sandbox-dry-run", "--version"}, options{mode: modeDryRun, args: []string{"--version"}}, ""},
		{"seccomp table", []string{"--sandbox-seccomp"}, options{mode: modeSeccompTable, args: []string{}}, ""},
		{"seccomp table explicit", []string{"--sandbox-seccomp=table"}, options{mode: modeSeccompTable, args: []string{}}, ""},
		{"seccomp bpf", []string{"--sandbox-seccomp=bpf"}, options{mode: modeSeccompBPF, args: []string{}}, ""},
		{"help", []string{"--sandbox-help"}, options{mode: modeHelp, args: []string{}}, ""},
		{"doctor", []string{"--sandbox-doctor", "--json"}, options{mode: modeDoctor, args: []string{"--json"}}, ""},
		{"unknown sandbox flag", []string{"--sandbox-frob"}, options{}, "unknown flag --sandbox-frob"},
		{"bad seccomp format", []string{"--sandbox-seccomp=json"}, options{}, "want --sandbox-seccomp=table or --sandbox-seccomp=bpf"},
		{"conflict", []string{"--sandbox-dry-run", "--sandbox-seccomp=bpf"}, options{}, "conflicts"},
		{"worktree named", []string{"-w", "feat1", "-p", "hi"}, options{args: []string{"-p", "hi"}, worktree: &worktreeFlag{"feat1", true}}, ""},
		{"worktree long", []string{"-p", "hi", "--worktree", "feat1"}, options{args: []string{"-p", "hi"}, worktree: &worktreeFlag{"feat1", true}}, ""},
		{"worktree =", []string{"--worktree=feat.1_a-b", "-p"}, options{args: []string{"-p"}, worktree: &worktreeFlag{"feat.1_a-b", true}}, ""},
		{"worktree joined", []string{"-wfeat1"}, options{args: []string{}, worktree: &worktreeFlag{"feat1", true}}, ""},
		{"worktree after --", []string{"-p", "--", "-w", "x"}, options{args: []string{"-p", "--", "-w", "x"}}, ""},
		{"worktree in a shell's args", []string{"--shell", "-w", "x"}, options{shell: true, args: []string{"-w", "x"}}, ""},
		{"worktree twice", []string{"-w", "a", "--worktree", "b"}, options{}, "-w/--worktree given twice"},
		{"worktree bad name", []string{"-w", "a/b"}, options{}, `-w a/b: not a worktree name`},
		{"worktree dot-dot", []string{"--worktree=a..b"}, options{}, "not a worktree name"},
		{"worktree leading dot", []string{"-w.x"}, options{}, "not a worktree name"},
		{"worktree empty", []string{"--worktree="}, options{}, "not a worktree name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseArgs(tt.args)
			if tt.usage != "" {
				if err == nil || multicall.Code(err) != multicall.ExitUsage || !strings.Contains(err.Error(), tt.usage) {
					t.Fatalf("parseArgs(%q) err = %v, want usage error containing %q", tt.args, err, tt.usage)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseArgs(%q): %v", tt.args, err)
			}
			if tt.want.worktree == nil && got.worktree != nil {
				t.Fatalf("parseArgs(%q): worktree %+v, want none", tt.args, got.worktree)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(options{}, worktreeFlag{})); diff != "" {
				t.Errorf("parseArgs(%q) mismatch (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

func TestReadKnobs(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		want  knobs
		usage string
	}{
		{"defaults", nil, knobs{"/opt/claude/bin", "/home/u/.claude-home", "", "agents"}, ""},
		{"overrides", map[string]string{"CLAUDE_SBX_BINDIR": "/x/bin/", "CLAUDE_SBX_HOME": "/data/sbx", "CLAUDE_SBX_TMP": "/var/tmp/me", "CLAUDE_SBX_NETNS": "work-2"},
			knobs{"/x/bin", "/data/sbx", "/var/tmp/me", "work-2"}, ""},
		{"relative home below home", map[string]string{"CLAUDE_SBX_HOME": "sbx/a"}, knobs{"/opt/claude/bin", "/home/u/sbx/a", "", "agents"}, ""},
		{"relative bindir", map[string]string{"CLAUDE_SBX_BINDIR": "bin"}, knobs{}, `CLAUDE_SBX_BINDIR="bin": not an absolute path`},
		{"relative tmp", map[string]string{"CLAUDE_SBX_TMP": "tmp"}, knobs{}, `CLAUDE_SBX_TMP="tmp": not an absolute path`},
		{"host tmp", map[string]string{"CLAUDE_SBX_TMP": "/tmp/"}, knobs{}, "must be a directory of its own"},
		{"home is real home", map[string]string{"CLAUDE_SBX_HOME": "/home/u"}, knobs{}, "would expose your real home"},
		{"home above real home", map[string]string{"CLAUDE_SBX_HOME": "/home"}, knobs{}, "would expose your real home"},
		{"home dotdot", map[string]string{"CLAUDE_SBX_HOME": "../x"}, knobs{}, "want an absolute path or a directory below your home"},
		{"newline", map[string]string{"CLAUDE_SBX_BINDIR": "/a\nb"}, knobs{}, "contains a control character"},
		{"bad netns", map[string]string{"CLAUDE_SBX_NETNS": "../../proc/1/ns/net"}, knobs{}, "CLAUDE_SBX_NETNS: invalid namespace name"},
		{"upper netns", map[string]string{"CLAUDE_SBX_NETNS": "Agents"}, knobs{}, "CLAUDE_SBX_NETNS: invalid namespace name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readKnobs(func(k string) string { return tt.env[k] }, "/home/u", 1000)
			if tt.usage != "" {
				if err == nil || multicall.Code(err) != multicall.ExitUsage || !strings.Contains(err.Error(), tt.usage) {
					t.Fatalf("readKnobs err = %v, want usage error containing %q", err, tt.usage)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("readKnobs = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestWorktreeUnnamed: -w without a name (the next argument is a flag, or
// there is none) makes one up, never the same twice.
func TestWorktreeUnnamed(t *testing.T) {
	for _, args := range [][]string{{"-w"}, {"-w", "-p", "hi"}, {"--worktree", "--model", "x"}} {
		o, err := parseArgs(args)
		if err != nil || o.worktree == nil || o.worktree.given || !strings.HasPrefix(o.worktree.name, "session-") || checkWorktreeName(o.worktree.name) != nil {
			t.Fatalf("parseArgs(%q) = %+v, %v; want a made-up name", args, o.worktree, err)
		}
		if len(o.args) != len(args)-1 {
			t.Errorf("parseArgs(%q).args = %q, want the rest", args, o.args)
		}
	}
	a, _ := parseArgs([]string{"-w"})
	b, _ := parseArgs([]string{"-w"})
	if a.worktree.name == b.worktree.name {
		t.Errorf("two made-up names are both %q", a.worktree.name)
	}
}
