package store_test

import (
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
)

// TestOutcomesByHour: the consumer counts successful and refused verifies per project and hour
// (a reactivate is neither), a redelivery adds nothing, and the chart's read gives every hour
// of the range, for one project or all.
func TestOutcomesByHour(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	p, q := mustProject(t, s, nil), mustProject(t, s, nil)
	cp := mustInsert(t, s, p.ID, values("O-1", "O-2")...)
	cq := mustInsert(t, s, q.ID, values("O-3")...)[0]
	hour := time.Now().UTC().Truncate(time.Hour)
	ms := hour.Add(time.Minute).UnixMilli()
	refused := verifyEvent(cp[1], 1, ms, "till")
	refused.Result, refused.Reason, refused.Changed = contract.ResultFailed, string(contract.CodeAlreadyUsed), false
	react := verifyEvent(cp[0], 2, ms+1, "till")
	react.Action, react.Result = contract.ActionReactivate, contract.ResultReactivated
	evs := []contract.Event{verifyEvent(cp[0], 1, ms, "till"), refused, react, verifyEvent(cq, 1, ms, "till")}
	if _, err := s.ApplyEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyEvents(ctx, evs); err != nil { // redelivered
		t.Fatal(err)
	}
	from, to := hour.Add(-2*time.Hour), hour.Add(time.Hour)
	one, err := s.OutcomesByHour(ctx, p.ID, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if len(one) != 3 || one[2].Success != 1 || one[2].Refused != 1 || one[0].Success+one[0].Refused != 0 {
		t.Fatalf("project's hours: %+v", one)
	}
	all, err := s.OutcomesByHour(ctx, "", from, to)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || all[2].Success != 2 || all[2].Refused != 1 {
		t.Fatalf("every project's hours: %+v", all)
	}
}
