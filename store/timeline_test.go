package store_test

import (
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
)

// TestRedemptionsByHour: the hourly counts are the successful verifies the consumer newly
// wrote, per UTC hour across projects: a redelivery adds nothing, refusals, reactivations and
// unknown-value attempts do not count, and every hour of the range is present.
func TestRedemptionsByHour(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	p1, p2 := mustProject(t, s, nil), mustProject(t, s, nil)
	c1 := mustInsert(t, s, p1.ID, values("H-1", "H-2", "H-3")...)
	c2 := mustInsert(t, s, p2.ID, values("H-9")...)
	hour := time.Now().UTC().Truncate(time.Hour)
	prev := hour.Add(-time.Hour)
	at := func(h time.Time, min int) int64 { return h.Add(time.Duration(min) * time.Minute).UnixMilli() }
	batch := []contract.Event{
		verifyEvent(c1[0], 1, at(prev, 5), "a"),
		verifyEvent(c1[1], 1, at(hour, 0), "b"),
		verifyEvent(c2[0], 1, at(hour, 1), "c"),
		{ID: contract.NewID(), CodeID: c1[2].ID, ProjectID: p1.ID, Action: contract.ActionVerify, Result: contract.ResultFailed,
			Reason: string(contract.CodeDisabled), IP: "::1", TS: at(hour, 2)},
		{ID: contract.NewID(), CodeID: c1[0].ID, ProjectID: p1.ID, Action: contract.ActionReactivate, Result: contract.ResultReactivated,
			IP: "::1", TS: at(hour, 3), Version: 2, Changed: true},
		{ID: contract.NewID(), Code: "GUESS", ProjectID: p1.ID, Action: contract.ActionVerify, Result: contract.ResultFailed,
			Reason: string(contract.CodeNotFound), IP: "::1", TS: at(hour, 4)},
	}
	for i := 0; i < 2; i++ { // the second time, a redelivery
		if _, err := s.ApplyEvents(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.RedemptionsByHour(ctx, prev.Add(-time.Hour), hour.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{0, 1, 2}
	if len(got) != len(want) {
		t.Fatalf("%d hours, want %d: %+v", len(got), len(want), got)
	}
	for i, h := range got {
		if h.Count != want[i] || !h.From.Equal(prev.Add(time.Duration(i-1)*time.Hour)) {
			t.Errorf("hour %d: %v %d, want %v %d", i, h.From, h.Count, prev.Add(time.Duration(i-1)*time.Hour), want[i])
		}
	}
}
