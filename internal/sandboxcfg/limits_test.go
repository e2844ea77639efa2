package sandboxcfg

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseLimit(t *testing.T) {
	tests := []struct {
		name, kind, value string
		want              uint64
		wantErr           string
	}{
		{"memory G", LimitMemory, "8G", 8 << 30, ""},
		{"memory lower m", LimitMemory, "512m", 512 << 20, ""},
		{"memory bytes", LimitMemory, "1048576", 1 << 20, ""},
		{"memory T", LimitMemory, "1T", 1 << 40, ""},
		{"tmp K", LimitTmp, "4096K", 4 << 20, ""},
		{"memory below 1M", LimitMemory, "1023K", 0, `"1023K": want a size from 1M`},
		{"memory zero", LimitMemory, "0", 0, "want a size"},
		{"memory overflow", LimitMemory, "99999999999999999T", 0, "want a size"},
		{"memory fraction", LimitMemory, "1.5G", 0, "want a size"},
		{"memory percent", LimitMemory, "50%", 0, "want a size"},
		{"memory negative", LimitMemory, "-1G", 0, "want a size"},
		{"tasks", LimitTasks, "2048", 2048, ""},
		{"tasks zero", LimitTasks, "0", 0, `"0": want a count of processes from 1 to 4194304`},
		{"tasks suffix", LimitTasks, "2K", 0, "want a count"},
		{"tasks too many", LimitTasks, "4194305", 0, "want a count"},
		{"cpu", LimitCPU, "200%", 200, ""},
		{"cpu without percent", LimitCPU, "2", 0, `"2": want a percentage of one CPU`},
		{"cpu zero", LimitCPU, "0%", 0, "want a percentage"},
		{"cpu too much", LimitCPU, "100001%", 0, "want a percentage"},
		{"unknown kind", "disk", "1G", 0, `unknown limit "disk"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseLimit(tt.kind, tt.value)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseLimit(%q, %q) = %d, %v, want error containing %q", tt.kind, tt.value, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseLimit(%q, %q) = %d, %v, want %d", tt.kind, tt.value, got, err, tt.want)
			}
		})
	}
}

func TestFormatLimit(t *testing.T) {
	tests := []struct {
		kind string
		n    uint64
		want string
	}{
		{LimitMemory, 8 << 30, "8G"},
		{LimitMemory, 1536 << 20, "1536M"},
		{LimitTmp, 1<<20 + 1, "1048577"},
		{LimitMemory, 2 << 40, "2T"},
		{LimitTasks, 2048, "2048"},
		{LimitCPU, 150, "150%"},
	}
	for _, tt := range tests {
		if got := FormatLimit(tt.kind, tt.n); got != tt.want {
			t.Errorf("FormatLimit(%q, %d) = %q, want %q", tt.kind, tt.n, got, tt.want)
		}
		// What FormatLimit shows parses back to the same value.
		if back, err := ParseLimit(tt.kind, FormatLimit(tt.kind, tt.n)); err != nil || back != tt.n {
			t.Errorf("ParseLimit(FormatLimit(%q, %d)) = %d, %v", tt.kind, tt.n, back, err)
		}
	}
}

func TestParseLimitDirectives(t *testing.T) {
	work := []Cond{{Name: PwdUnder, Path: "/home/u/work", Line: 3}}
	src := "limit memory 8G\nlimit tasks 2048\nif pwd-under ~/work\n  limit cpu 200%\n  limit tmp 4G\n  budget optional\nend\nbudget required\n"
	got, err := parse(src)
	if err != nil {
		t.Fatal(err)
	}
	want := []Directive{
		{Line: 1, Name: Limit, Args: []string{"memory", "8G"}},
		{Line: 2, Name: Limit, Args: []string{"tasks", "2048"}},
		{Line: 4, Name: Limit, Args: []string{"cpu", "200%"}, When: work},
		{Line: 5, Name: Limit, Args: []string{"tmp", "4G"}, When: work},
		{Line: 6, Name: Budget, Args: []string{"optional"}, When: work},
		{Line: 8, Name: Budget, Args: []string{"required"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Parse(%q) (-want +got):\n%s", src, diff)
	}
}

func TestParseLimitErrors(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"missing value", "limit memory", "~/.claude-sandbox-init:1: limit: missing argument: want limit memory|tasks|cpu|tmp VALUE"},
		{"too many", "limit memory 8G 9G", "~/.claude-sandbox-init:1: limit: too many arguments: want limit memory|tasks|cpu|tmp VALUE"},
		{"unknown kind", "limit disk 8G", `~/.claude-sandbox-init:1: limit: unknown limit "disk": want memory, tasks, cpu or tmp`},
		{"bad size", "\nlimit memory lots", `~/.claude-sandbox-init:2: limit memory: "lots": want a size from 1M to 1024T, in bytes or with a K, M, G or T suffix (8G)`},
		{"bad cpu", "limit cpu 2", `~/.claude-sandbox-init:1: limit cpu: "2": want a percentage of one CPU from 1% to 100000% (200% is two CPUs)`},
		{"budget value", "budget maybe", `~/.claude-sandbox-init:1: budget: "maybe": want required or optional`},
		{"budget missing", "budget", "~/.claude-sandbox-init:1: budget: missing argument: want budget required|optional"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(tt.src)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Parse(%q) = %v, want %s", tt.src, err, tt.want)
			}
		})
	}
}

func TestParseCeiling(t *testing.T) {
	const name = "/etc/claude-sandbox/limits"
	got, err := ParseCeiling([]byte("# the machine's share\nmemory 16G # at most\n\ntasks 4096\ncpu 400%\ntmp 8G\n"), name)
	if err != nil {
		t.Fatal(err)
	}
	want := Ceiling{LimitMemory: 16 << 30, LimitTasks: 4096, LimitCPU: 400, LimitTmp: 8 << 30}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("ParseCeiling (-want +got):\n%s", diff)
	}
	for _, tt := range []struct{ name, src, want string }{
		{"one word", "memory", name + ":1: want KIND VALUE, e.g. memory 16G"},
		{"limit prefix", "limit memory 16G", name + ":1: want KIND VALUE, e.g. memory 16G"},
		{"unknown", "\ndisk 1G", name + `:2: unknown limit "disk": want memory, tasks, cpu or tmp`},
		{"bad value", "tasks lots", name + `:1: "lots": want a count of processes from 1 to 4194304`},
		{"twice", "cpu 100%\ncpu 200%", name + ":2: cpu is set twice"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseCeiling([]byte(tt.src), name)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("ParseCeiling(%q) = %v, want %s", tt.src, err, tt.want)
			}
		})
	}
}

func FuzzParseCeiling(f *testing.F) {
	for _, s := range []string{"memory 16G\ntasks 4096\ncpu 400%\ntmp 8G\n", "# c\nmemory 1048576 # x\n", "cpu 1%\ncpu 2%\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		c, err := ParseCeiling(src, "limits")
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Line < 1 {
				t.Fatalf("error without a line: %v", err)
			}
			if strings.ContainsAny(err.Error(), "\n\x00") {
				t.Fatalf("error is not one clean line: %q", err)
			}
			return
		}
		for k, n := range c {
			if back, err := ParseLimit(k, FormatLimit(k, n)); err != nil || back != n {
				t.Fatalf("%s %d does not survive FormatLimit: %d, %v", k, n, back, err)
			}
		}
	})
}
