package claude

import (
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/hostpath"
	"github.com/claude-sandbox/claude-sandbox/internal/sandbox"
)

// budgetNotices says the missing budget in full once a day and in one
// short line otherwise (sandbox.BudgetNotices): the stamp is in the
// directory of the per-project homes, checked like it is for the homes
// and read without following a link; without that directory, in full.
func budgetNotices(notices []string, home string, uid int, now time.Time) []string {
	homes := filepath.Join(home, homesName)
	r, err := hostpath.Open(homes, false)
	if err != nil {
		out, _ := sandbox.BudgetNotices(notices, time.Time{}, false, now)
		return out
	}
	defer r.Close()
	if checkHomes(homes, uid)(r) != nil {
		out, _ := sandbox.BudgetNotices(notices, time.Time{}, false, now)
		return out
	}
	dir := int(r.File.Fd())
	var st unix.Stat_t
	known := unix.Fstatat(dir, sandbox.BudgetNoticeStamp, &st, unix.AT_SYMLINK_NOFOLLOW) == nil &&
		st.Mode&unix.S_IFMT == unix.S_IFREG && int(st.Uid) == uid
	out, full := sandbox.BudgetNotices(notices, time.Unix(st.Mtim.Unix()), known, now)
	if full {
		writeAt(dir, sandbox.BudgetNoticeStamp, nil)
	}
	return out
}
