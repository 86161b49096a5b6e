package store_test

import (
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
)

func TestStatistics(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	now := time.Now().Unix()
	p := mustProject(t, s, ptr(now+100))
	other := mustProject(t, s, nil)
	mustInsert(t, s, other.ID, values("a", "b", "zz")...)

	checkStats(t, s, p.ID, now, contract.Statistics{})
	rows := mustInsert(t, s, p.ID,
		contract.NewCode{Code: "a"},                           // project expiry
		contract.NewCode{Code: "b", ExpiresAt: ptr(now + 10)}, // own expiry, soon
		contract.NewCode{Code: "c", ExpiresAt: ptr(now - 5)},  // already expired
		contract.NewCode{Code: "d", ExpiresAt: ptr(now + 1000)},
	)
	a, b, c := rows[0].ID, rows[1].ID, rows[2].ID
	snap := func(id string, sn contract.CodeRecord) {
		t.Helper()
		sn.ID = id
		if err := s.ApplySnapshot(ctx, sn); err != nil {
			t.Fatalf("snapshot: %v", err)
		}
	}
	type at struct {
		now  int64
		want contract.Statistics
	}
	steps := []struct {
		name   string
		change func()
		at     []at
	}{
		{"inserted", func() {}, []at{
			{now - 10, contract.Statistics{TotalCodes: 4, UnusedCodes: 4}},
			{now - 5, contract.Statistics{TotalCodes: 4, UnusedCodes: 3, ExpiredCodes: 1}}, // now >= expiry is expired
			{now, contract.Statistics{TotalCodes: 4, UnusedCodes: 3, ExpiredCodes: 1}},
			{now + 9, contract.Statistics{TotalCodes: 4, UnusedCodes: 3, ExpiredCodes: 1}},
			{now + 10, contract.Statistics{TotalCodes: 4, UnusedCodes: 2, ExpiredCodes: 2}},
			{now + 100, contract.Statistics{TotalCodes: 4, UnusedCodes: 1, ExpiredCodes: 3}},
			{now + 1000, contract.Statistics{TotalCodes: 4, ExpiredCodes: 4}},
		}},
		{"verify b", func() { snap(b, contract.CodeRecord{VerifiedAtMs: now * 1000, VerifiedBy: "x", Version: 1}) }, []at{
			{now, contract.Statistics{TotalCodes: 4, UsedCodes: 1, UnusedCodes: 2, ExpiredCodes: 1}},
			{now + 100, contract.Statistics{TotalCodes: 4, UsedCodes: 1, UnusedCodes: 1, ExpiredCodes: 2}},
		}},
		{"disable expired c", func() { snap(c, contract.CodeRecord{Disabled: true, Version: 1}) }, []at{
			{now, contract.Statistics{TotalCodes: 4, UsedCodes: 1, UnusedCodes: 2, DisabledCodes: 1}},
		}},
		{"disable used b", func() { snap(b, contract.CodeRecord{VerifiedAtMs: now * 1000, Disabled: true, Version: 2}) }, []at{
			{now, contract.Statistics{TotalCodes: 4, UnusedCodes: 2, DisabledCodes: 2}},
		}},
		{"enable and reactivate b", func() { snap(b, contract.CodeRecord{Version: 3}) }, []at{
			{now, contract.Statistics{TotalCodes: 4, UnusedCodes: 3, DisabledCodes: 1}},
			{now + 10, contract.Statistics{TotalCodes: 4, UnusedCodes: 2, DisabledCodes: 1, ExpiredCodes: 1}},
		}},
		{"older snapshot ignored", func() { snap(b, contract.CodeRecord{Disabled: true, Version: 2}) }, []at{
			{now, contract.Statistics{TotalCodes: 4, UnusedCodes: 3, DisabledCodes: 1}},
		}},
		{"version-only change", func() { snap(b, contract.CodeRecord{Version: 4}) }, []at{
			{now, contract.Statistics{TotalCodes: 4, UnusedCodes: 3, DisabledCodes: 1}},
		}},
		{"project expiry cleared", func() {
			if err := s.SetProjectExpiry(ctx, p.ID, nil); err != nil {
				t.Fatal(err)
			}
		}, []at{
			{now + 100, contract.Statistics{TotalCodes: 4, UnusedCodes: 2, DisabledCodes: 1, ExpiredCodes: 1}},
			{now + 5000, contract.Statistics{TotalCodes: 4, UnusedCodes: 1, DisabledCodes: 1, ExpiredCodes: 2}},
		}},
		{"project expiry set earlier", func() {
			if err := s.SetProjectExpiry(ctx, p.ID, ptr(now-1)); err != nil {
				t.Fatal(err)
			}
		}, []at{
			{now, contract.Statistics{TotalCodes: 4, UnusedCodes: 2, DisabledCodes: 1, ExpiredCodes: 1}}, // a follows the project, b and d their own
		}},
		{"verify a", func() { snap(a, contract.CodeRecord{VerifiedAtMs: now*1000 + 999, Version: 1}) }, []at{
			{now, contract.Statistics{TotalCodes: 4, UsedCodes: 1, UnusedCodes: 2, DisabledCodes: 1}},
		}},
		{"more codes", func() { mustInsert(t, s, p.ID, values("e", "f", "a")...) }, []at{
			{now, contract.Statistics{TotalCodes: 6, UsedCodes: 1, UnusedCodes: 2, DisabledCodes: 1, ExpiredCodes: 2}},
		}},
	}
	for _, st := range steps {
		st.change()
		for _, a := range st.at {
			t.Run(st.name, func(t *testing.T) { checkStats(t, s, p.ID, a.now, a.want) })
		}
	}
	checkStats(t, s, other.ID, now, contract.Statistics{TotalCodes: 3, UnusedCodes: 3})

	got, _ := s.CodeByID(ctx, p.ID, a)
	if c := got.Resource(nil, now); got.VerifiedAtMs != now*1000+999 || c.VerifiedAt == nil || *c.VerifiedAt != now || got.Version != 1 {
		t.Errorf("verified code = %+v, want ms %d", got, now*1000+999)
	}
	got, _ = s.CodeByID(ctx, p.ID, b)
	if got.Disabled || got.VerifiedAtMs != 0 || got.VerifiedBy != "" || got.Version != 4 {
		t.Errorf("reactivated code = %+v", got)
	}
}
