package store_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/store"
)

// TestRecentVerifications: the statistics endpoint's recent_verifications are the project's
// codes currently used (verified and not disabled), newest verified_at first, at most limit.
func TestRecentVerifications(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	now := time.Now().Unix()
	p := mustProject(t, s, nil)
	other := mustProject(t, s, nil)

	if got, err := s.RecentVerifications(ctx, p.ID, 10); err != nil || len(got) != 0 || got == nil {
		t.Fatalf("no codes: %v %v, want an empty list", got, err)
	}
	var vs []string
	for i := 0; i < 14; i++ {
		vs = append(vs, fmt.Sprintf("R-%02d", i))
	}
	rows := mustInsert(t, s, p.ID, values(vs...)...)
	orows := mustInsert(t, s, other.ID, values("O-1")...)
	snap := func(r contract.CodeRecord, sn contract.CodeRecord) {
		t.Helper()
		sn.ID = r.ID
		if err := s.ApplySnapshot(ctx, sn); err != nil {
			t.Fatalf("snapshot: %v", err)
		}
	}
	// R-00..R-11 verified one second apart (R-11 newest), R-00..R-05 by "till-N", the rest by
	// nobody; R-10 then disabled (no longer used), R-12 and R-13 never verified.
	for i := 0; i < 12; i++ {
		sn := contract.CodeRecord{VerifiedAtMs: (now-100+int64(i))*1000 + 500, Version: 1}
		if i < 6 {
			sn.VerifiedBy = fmt.Sprintf("till-%d", i)
		}
		snap(rows[i], sn)
	}
	snap(rows[10], contract.CodeRecord{VerifiedAtMs: (now-90)*1000 + 500, Disabled: true, Version: 2})
	snap(orows[0], contract.CodeRecord{VerifiedAtMs: now * 1000, VerifiedBy: "x", Version: 1}) // another project's, newest

	got, err := s.RecentVerifications(ctx, p.ID, contract.RecentVerificationsLimit)
	if err != nil {
		t.Fatal(err)
	}
	want := []int{11, 9, 8, 7, 6, 5, 4, 3, 2, 1}
	if len(got) != len(want) {
		t.Fatalf("%d recent verifications, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		wantBy := ""
		if w < 6 {
			wantBy = fmt.Sprintf("till-%d", w)
		}
		if g.Code != vs[w] || g.VerifiedAt != now-100+int64(w) || (g.VerifiedBy == nil) != (wantBy == "") ||
			(g.VerifiedBy != nil && *g.VerifiedBy != wantBy) {
			t.Errorf("#%d: %+v (by %v), want %s at %d by %q", i, g, g.VerifiedBy, vs[w], now-100+int64(w), wantBy)
		}
	}
	if got, err := s.RecentVerifications(ctx, p.ID, 3); err != nil || len(got) != 3 || got[2].Code != vs[8] {
		t.Errorf("limit 3: %+v %v", got, err)
	}
	// Reactivated codes leave the list.
	snap(rows[11], contract.CodeRecord{Version: 2})
	if got, err := s.RecentVerifications(ctx, p.ID, 10); err != nil || len(got) != 10 || got[0].Code != vs[9] || got[9].Code != vs[0] {
		t.Errorf("after reactivating R-11: %+v %v", got, err)
	}
	if got, err := s.RecentVerifications(ctx, contract.NewID(), 10); err != nil || len(got) != 0 {
		t.Errorf("unknown project: %+v %v", got, err)
	}
	if _, err := s.RecentVerifications(ctx, "not-an-id", 10); !errors.Is(err, contract.ErrNotFound) {
		t.Errorf("malformed project id: %v, want not found", err)
	}
}

// TestRecentVerificationsUsesItsIndex: in a project of 20,000 codes, 4,000 of them used, the
// query reads code_used_recent_idx in its order, with no sort of the project's used codes, so
// its cost does not grow with the project.
func TestRecentVerificationsUsesItsIndex(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	p := mustProject(t, s, nil)
	codes := insertNumbered(t, s, p.ID, "RI", 20_000)
	var evs []contract.Event
	ms := time.Now().UnixMilli()
	for i := 0; i < len(codes); i += 5 {
		evs = append(evs, verifyEvent(codes[i], 1, ms+int64(i), "till"))
	}
	if _, err := s.ApplyEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	if err := s.AfterBulkLoad(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := s.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	rows, err := conn.Query(ctx, `EXPLAIN `+store.RecentVerificationsSQL, p.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	text := strings.Join(plan, "\n")
	if !strings.Contains(text, "code_used_recent_idx") || strings.Contains(text, "Sort") {
		t.Errorf("plan does not read code_used_recent_idx in order:\n%s", text)
	}
}

// ProjectStatistics reads the counts and the recent verifications from one snapshot: while
// batches of verifies commit, every answer lists exactly min(used, limit) recent codes. Read
// apart, a commit between the two reads shows recent codes the counts do not count yet.
func TestProjectStatisticsOneSnapshot(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	p := mustProject(t, s, nil)
	codes := insertNumbered(t, s, p.ID, "SNAP", 400)
	done := make(chan error, 1)
	go func() {
		ms := time.Now().UnixMilli()
		for i := 0; i < len(codes); i += 5 {
			batch := make([]contract.Event, 0, 5)
			for _, c := range codes[i : i+5] {
				batch = append(batch, verifyEvent(c, 1, ms+int64(i), "snap"))
			}
			if _, err := s.ApplyEvents(ctx, batch); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	const limit = 1000 // above the codes' count: every used code is listed
	reads := 0
	for finished := false; !finished; reads++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			finished = true
		default:
		}
		st, recent, err := s.ProjectStatistics(ctx, p.ID, time.Now().Unix(), limit)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(recent)) != st.UsedCodes || st.TotalCodes != int64(len(codes)) {
			t.Fatalf("read %d: %d recent verifications, %d codes counted used of %d", reads, len(recent), st.UsedCodes, st.TotalCodes)
		}
	}
	if st, recent, err := s.ProjectStatistics(ctx, p.ID, time.Now().Unix(), 3); err != nil || st.UsedCodes != int64(len(codes)) || len(recent) != 3 {
		t.Fatalf("after: %+v, %d recent, %v", st, len(recent), err)
	}
	if _, _, err := s.ProjectStatistics(ctx, contract.NewID(), time.Now().Unix(), 3); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("unknown project: %v", err)
	}
	t.Logf("%d consistent reads while %d codes were verified", reads, len(codes))
}
