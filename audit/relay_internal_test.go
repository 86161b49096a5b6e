package audit

import (
	"testing"
	"time"
)

// The pause between polls shrinks as a poll finds more: the longest after an empty poll, none
// once a poll read the target or filled an outbox's batch, in between in proportion.
func TestPauseShrinksWithWhatAPollFound(t *testing.T) {
	r := NewRelay(nil, nil, RelayConfig{Outboxes: []string{"o"}})
	for _, tc := range []struct {
		n    int
		full bool
		want time.Duration
	}{
		{0, false, 100 * time.Millisecond},
		{1000, false, 55 * time.Millisecond},
		{1999, false, 10*time.Millisecond + 90*time.Millisecond/2000},
		{2000, false, 0},
		{3, true, 0},
	} {
		if got := r.pause(tc.n, tc.full); got != tc.want {
			t.Errorf("pause(%d, full %v) = %s, want %s", tc.n, tc.full, got, tc.want)
		}
	}
}
