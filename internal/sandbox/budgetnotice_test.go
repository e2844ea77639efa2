package sandbox

import (
	"reflect"
	"testing"
	"time"
)

func TestBudgetNotices(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	other := "not using network namespacing"
	tests := []struct {
		name     string
		notices  []string
		last     time.Time
		known    bool
		want     []string
		wantFull bool
	}{
		{"no stamp", []string{other, NoBudgetNotice}, time.Time{}, false, []string{other, NoBudgetNotice}, true},
		{"an hour ago", []string{other, NoBudgetNotice}, now.Add(-time.Hour), true, []string{other, NoBudgetShort}, false},
		{"a day ago", []string{NoBudgetNotice}, now.Add(-NoBudgetEvery), true, []string{NoBudgetNotice}, true},
		{"in the future", []string{NoBudgetNotice}, now.Add(time.Hour), true, []string{NoBudgetNotice}, true},
		{"no budget notice", []string{other}, time.Time{}, false, []string{other}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, full := BudgetNotices(tt.notices, tt.last, tt.known, now)
			if !reflect.DeepEqual(got, tt.want) || full != tt.wantFull {
				t.Errorf("BudgetNotices = %q, %v; want %q, %v", got, full, tt.want, tt.wantFull)
			}
		})
	}
}
