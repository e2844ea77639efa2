//go:build linux

package seccomp

import (
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/seccomp/sysnum"
	"golang.org/x/sys/unix"
)

// TestTablesMatchXSys checks zsysnum.go against golang.org/x/sys/unix's
// zsysnum_linux_{amd64,arm64}.go, the version go.mod requires.
func TestTablesMatchXSys(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "golang.org/x/sys").Output()
	if err != nil {
		t.Fatalf("go list -m golang.org/x/sys: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	for goarch, a := range arches {
		t.Run(goarch, func(t *testing.T) {
			want, err := sysnum.Parse(dir, goarch)
			if err != nil {
				t.Fatal(err)
			}
			if len(want) != len(a.table) {
				t.Errorf("table has %d syscalls, x/sys has %d (run go generate ./internal/seccomp)", len(a.table), len(want))
			}
			for _, e := range want {
				if got, ok := a.table.lookup(e.Name); !ok || got != e.Nr {
					t.Errorf("table[%q] = %d, %v; x/sys says %d", e.Name, got, ok, e.Nr)
				}
			}
		})
	}
}

// TestTablesMatchHostConstants checks the host architecture's table
// against compiled-in constants of golang.org/x/sys/unix.
func TestTablesMatchHostConstants(t *testing.T) {
	a, ok := arches[runtime.GOARCH]
	if !ok {
		t.Skipf("no table for %s", runtime.GOARCH)
	}
	for name, nr := range map[string]uint32{
		"read": unix.SYS_READ, "ioctl": unix.SYS_IOCTL, "clone": unix.SYS_CLONE,
		"clone3": unix.SYS_CLONE3, "socket": unix.SYS_SOCKET, "socketpair": unix.SYS_SOCKETPAIR,
		"personality": unix.SYS_PERSONALITY, "keyctl": unix.SYS_KEYCTL, "mount": unix.SYS_MOUNT,
		"unshare": unix.SYS_UNSHARE, "setns": unix.SYS_SETNS, "bpf": unix.SYS_BPF,
		"perf_event_open": unix.SYS_PERF_EVENT_OPEN, "userfaultfd": unix.SYS_USERFAULTFD,
		"io_uring_setup": unix.SYS_IO_URING_SETUP, "fsopen": unix.SYS_FSOPEN,
		"getppid": unix.SYS_GETPPID, "ptrace": unix.SYS_PTRACE, "mseal": unix.SYS_MSEAL,
	} {
		if got, _ := a.table.lookup(name); got != nr {
			t.Errorf("table[%q] = %d, unix.SYS_%s = %d", name, got, strings.ToUpper(name), nr)
		}
	}
}

// nrOf is tab's number of name, 0 if it has none.
func nrOf(tab sysTable, name string) uint32 {
	nr, _ := tab.lookup(name)
	return nr
}

// TestTablesSortedByName checks what sysTable.lookup and newPlan rely on:
// names in order, numbers distinct.
func TestTablesSortedByName(t *testing.T) {
	for goarch, a := range arches {
		for i := 1; i < len(a.table); i++ {
			if a.table[i-1].name >= a.table[i].name {
				t.Errorf("%s: %q before %q: run go generate ./internal/seccomp", goarch, a.table[i-1].name, a.table[i].name)
			}
		}
		for _, sc := range a.table {
			if nr, ok := a.table.lookup(sc.name); !ok || nr != sc.nr {
				t.Errorf("%s: lookup(%q) = %d, %v; want %d", goarch, sc.name, nr, ok, sc.nr)
			}
		}
		seen := map[uint32]string{}
		for _, sc := range a.table {
			if other, dup := seen[sc.nr]; dup {
				t.Errorf("%s: %q and %q both have number %d", goarch, other, sc.name, sc.nr)
			}
			seen[sc.nr] = sc.name
		}
		if _, ok := a.table.lookup("no_such_syscall"); ok {
			t.Errorf("%s: lookup(no_such_syscall) found it", goarch)
		}
	}
}
