package store_test

import (
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
)

// TestUnknownAttemptsLogged: an attempt on a value no code has is a log row without a code id,
// holding the value; a redelivery writes nothing; the log search finds it by its value and
// shows the value; it changes no code and no statistic.
func TestUnknownAttemptsLogged(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	p := mustProject(t, s, nil)
	real := mustInsert(t, s, p.ID, values("REAL-1")...)[0]
	before := bruteStats(t, s, p.ID, time.Now().Unix())
	now := time.Now()
	attempt := func(value string) contract.Event {
		return contract.Event{ID: contract.NewID(), Code: value, ProjectID: p.ID, Action: contract.ActionVerify,
			Result: contract.ResultFailed, Reason: string(contract.CodeNotFound), VerifiedBy: "bot", IP: "203.0.113.9", TS: now.UnixMilli()}
	}
	batch := []contract.Event{attempt("GUESS-1"), attempt("GUESS-1"), attempt("GUESS-2"), verifyEvent(real, 1, now.UnixMilli(), "till")}
	if n, err := s.ApplyEvents(ctx, batch); err != nil || n != 4 {
		t.Fatalf("apply = %d, %v; want 4", n, err)
	}
	if n, err := s.ApplyEvents(ctx, batch); err != nil || n != 0 {
		t.Fatalf("redelivery = %d, %v; want 0", n, err)
	}
	bad := contract.Event{ID: contract.NewID(), ProjectID: p.ID, Action: contract.ActionVerify, TS: now.UnixMilli()}
	if _, err := s.ApplyEvents(ctx, []contract.Event{bad}); err == nil {
		t.Error("an event with neither a code id nor a value was stored")
	}

	window := contract.LogFilter{From: now.Add(-time.Hour), To: now.Add(time.Hour), ProjectID: p.ID}
	f := window
	f.Code = "GUESS-1"
	got, err := s.SearchLogs(ctx, f)
	if err != nil || len(got) != 2 {
		t.Fatalf("search by the unknown value = %+v, %v; want its 2 attempts", got, err)
	}
	for _, r := range got {
		if r.CodeID != "" || r.Code != "GUESS-1" || r.Reason != string(contract.CodeNotFound) || r.IP != "203.0.113.9" {
			t.Errorf("attempt row %+v", r)
		}
	}
	all, err := s.SearchLogs(ctx, window)
	if err != nil || len(all) != 4 {
		t.Fatalf("project's logs = %d rows, %v; want 4", len(all), err)
	}
	if after := bruteStats(t, s, p.ID, time.Now().Unix()); after.TotalCodes != before.TotalCodes {
		t.Errorf("statistics changed by unknown attempts: %+v → %+v", before, after)
	}
}
