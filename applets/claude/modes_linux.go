package claude

import (
	"fmt"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
	"github.com/claude-sandbox/claude-sandbox/internal/quote"
	"github.com/claude-sandbox/claude-sandbox/internal/sandbox"
)

// The roots of the read-write binds (the project, the sandbox home, the
// private tmp, the config's rw lines) are mount points inside: the sandbox
// cannot rename or remove them, but it owns them and can chmod them. A
// `chmod 0777 .` at the project root lets every local user write into the
// project (hooks, scripts the user runs next); a `chmod 0755` of the
// sandbox home shows it to them. So the launcher records each root's mode
// before the chain starts and puts it back when the chain has ended.

// modeBits are the bits chmod sets: permissions, S_ISUID, S_ISGID, S_ISVTX.
const modeBits = 0o7777

// rootMode is the recorded mode of one bind root.
type rootMode struct {
	f    *os.File // the bind source's fd (O_PATH is enough)
	name string   // the host path, for the message
	mode uint32   // modeBits of the mode at the start
}

// rootModes are the modes to put back at exit.
type rootModes []rootMode

// recordRootModes records the modes of the read-write bind roots of l,
// from the fds of b (openBinds).
func recordRootModes(l *sandbox.Launch, b *bound) (rootModes, error) {
	return recordModes(writableRoots(&l.Plan, b.files, sandbox.SeccompFD+1))
}

// writableRoots returns the name and fd of every read-write bind that p
// binds from an fd; files[i] is the fd numbered firstFD+i (bindFromFDs).
func writableRoots(p *bwrap.Plan, files []*os.File, firstFD int) (names []string, fds []*os.File) {
	for _, o := range p.Ops {
		i := o.SrcFD - firstFD
		if !o.IsWritable() || o.SrcFD <= 2 || i < 0 || i >= len(files) {
			continue
		}
		names = append(names, o.Src)
		fds = append(fds, files[i])
	}
	return names, fds
}

// recordModes records the mode of each directory by its open fd, never by
// name: the name may have been swapped since it was checked.
func recordModes(names []string, fds []*os.File) (rootModes, error) {
	var m rootModes
	for i, f := range fds {
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil {
			return nil, fmt.Errorf("record the mode of %s: %w", quote.String(names[i]), os.NewSyscallError("fstat", err))
		}
		m = append(m, rootMode{f: f, name: names[i], mode: st.Mode & modeBits})
	}
	return m, nil
}

// restore puts back every mode that changed, on the same fds, and says so
// on w in one line per root; a mode it cannot put back is named with the
// command that would.
func (m rootModes) restore(w io.Writer) {
	for _, r := range m {
		fd := int(r.f.Fd())
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			fmt.Fprintf(w, "claude: cannot check the mode of %s: %v\n", quote.String(r.name), os.NewSyscallError("fstat", err))
			continue
		}
		now := st.Mode & modeBits
		if now == r.mode {
			continue
		}
		if err := fchmodFD(fd, r.mode); err != nil {
			fmt.Fprintf(w, "claude: the sandbox changed the mode of %s from %04o to %04o and it cannot be put back: %v: run chmod %04o %s\n",
				quote.String(r.name), r.mode, now, err, r.mode, quote.String(r.name))
			continue
		}
		fmt.Fprintf(w, "claude: the sandbox changed the mode of %s from %04o to %04o: restored %04o\n",
			quote.String(r.name), r.mode, now, r.mode)
	}
}

// fchmodFD sets the mode of the file fd refers to, also when fd is O_PATH
// (fchmod refuses those with EBADF): through fchmodat2's AT_EMPTY_PATH
// where the kernel has it (Linux 6.6), else through the fd's /proc link,
// which names the same inode, not a path.
func fchmodFD(fd int, mode uint32) error {
	if err := unix.Fchmodat(fd, "", mode, unix.AT_EMPTY_PATH); err == nil {
		return nil
	}
	return chmodProcFD(fd, mode)
}

// chmodProcFD is fchmodFD for kernels without fchmodat2.
func chmodProcFD(fd int, mode uint32) error {
	if err := unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), mode); err != nil {
		return os.NewSyscallError("chmod", err)
	}
	return nil
}
