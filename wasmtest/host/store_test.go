package host

import (
	"fmt"
	"testing"
)

// TestLogStore_Bound: the capture keeps at most Options.MaxLogEntries lines, dropping the oldest
// half when full, and keeps the newest line; unset, the default bound applies.
func TestLogStore_Bound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		max, add, wantMax int
	}{
		{max: 10, add: 25, wantMax: 10},
		{max: 1, add: 5, wantMax: 1},
		{max: 0, add: 300, wantMax: defaultMaxLogEntries},
	} {
		h := &Host{opts: Options{MaxLogEntries: tc.max}}
		for i := range tc.add {
			h.logs.add(LogEntry{Level: LogInfo, Message: fmt.Sprint("line ", i)}, h)
		}
		got := h.Logs()
		if len(got) > tc.wantMax || len(got) == 0 {
			t.Errorf("max %d, %d lines added: %d kept, want 1..%d", tc.max, tc.add, len(got), tc.wantMax)
			continue
		}
		if last := got[len(got)-1].Message; last != fmt.Sprint("line ", tc.add-1) {
			t.Errorf("max %d: newest line kept is %q", tc.max, last)
		}
	}
}
