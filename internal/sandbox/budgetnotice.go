package sandbox

import "time"

// NoBudgetShort is what the launcher says instead of NoBudgetNotice when
// it said that in full less than NoBudgetEvery ago (BudgetNoticeStamp).
const NoBudgetShort = "budget: none: the sandbox runs without limits on memory, processes and CPU (claude-sandbox doctor says how to have them)"

// BudgetNoticeStamp is the file in the directory of the per-project homes
// (HomesName, in no sandbox's view) whose modification time is when the
// launcher last said NoBudgetNotice in full.
const BudgetNoticeStamp = "budget-notice.stamp"

// NoBudgetEvery is how often NoBudgetNotice is said in full.
const NoBudgetEvery = 24 * time.Hour

// BudgetNotices returns notices with NoBudgetNotice replaced by
// NoBudgetShort when it was said in full at last (known) within
// NoBudgetEvery before now, and whether it stays in full (then the stamp
// is to be renewed). A stamp from the future counts as unknown.
func BudgetNotices(notices []string, last time.Time, known bool, now time.Time) ([]string, bool) {
	out := make([]string, 0, len(notices))
	full := false
	for _, n := range notices {
		if n == NoBudgetNotice {
			if known && !last.After(now) && now.Sub(last) < NoBudgetEvery {
				n = NoBudgetShort
			} else {
				full = true
			}
		}
		out = append(out, n)
	}
	return out, full
}
