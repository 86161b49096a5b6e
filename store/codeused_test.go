package store_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/store"
	"github.com/jackc/pgx/v5"
)

// usedDrift lists the differences between code_used and the codes it mirrors (verified, not
// disabled, with the same verified_at), both ways; empty when they agree.
func usedDrift(t *testing.T, s *store.Store) []string {
	t.Helper()
	rows, err := s.Pool().Query(testCtx(t), `
		(SELECT 'missing', project_id::text, seq, verified_at FROM codes WHERE verified_at IS NOT NULL AND NOT is_disabled
		 EXCEPT SELECT 'missing', project_id::text, seq, verified_at FROM code_used)
		UNION ALL
		(SELECT 'extra', project_id::text, seq, verified_at FROM code_used
		 EXCEPT SELECT 'extra', project_id::text, seq, verified_at FROM codes WHERE verified_at IS NOT NULL AND NOT is_disabled)`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var (
			kind, project string
			seq           int64
			at            time.Time
		)
		err := r.Scan(&kind, &project, &seq, &at)
		return fmt.Sprintf("%s: project %s seq %d verified %s", kind, project, seq, at.Format(time.RFC3339Nano)), err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCodeUsedFollowsCodes: code_used holds exactly the used codes, with their verified_at,
// whatever changes them: codes inserted used, verifies, reactivations, verifies again, disables
// and enables, applied by eight writers at once over overlapping codes (the newest version of
// each code wins, in whatever order they commit), and a truncate.
func TestCodeUsedFollowsCodes(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	p1, p2 := mustProject(t, s, nil), mustProject(t, s, nil)
	var codes []contract.CodeRecord
	for _, p := range []contract.Project{p1, p2} {
		codes = append(codes, insertNumbered(t, s, p.ID, "U", 300)...)
	}
	// Codes written used by a bulk copy (a restore), some of them disabled.
	past := time.Now().Add(-time.Hour).Truncate(time.Microsecond)
	var src [][]any
	for i := range 40 {
		src = append(src, []any{contract.NewID(), p2.ID, fmt.Sprintf("copied-%d", i), i%4 == 0, past, time.Now()})
	}
	if _, err := s.Pool().CopyFrom(ctx, pgx.Identifier{"codes"},
		[]string{"id", "project_id", "code", "is_disabled", "verified_at", "created_at"}, pgx.CopyFromRows(src)); err != nil {
		t.Fatal(err)
	}
	if d := usedDrift(t, s); len(d) > 0 {
		t.Fatalf("after inserts: %s", strings.Join(d, "\n"))
	}

	var version atomic.Int64
	version.Store(1)
	const writers, rounds = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for range rounds {
				// A batch of events over random codes: verify (a new verified_at each time),
				// reactivate, or disable/enable through a bulk snapshot.
				var evs []contract.Event
				var snaps []contract.CodeRecord
				for range 40 {
					c := codes[r.IntN(len(codes))]
					v := version.Add(1)
					ms := time.Now().UnixMilli() + int64(r.IntN(100000))
					switch r.IntN(4) {
					case 0, 1:
						evs = append(evs, verifyEvent(c, v, ms, fmt.Sprintf("w%d", w)))
					case 2:
						evs = append(evs, contract.Event{ID: contract.NewID(), CodeID: c.ID, ProjectID: c.ProjectID,
							Action: contract.ActionReactivate, Result: contract.ResultReactivated, TS: ms, Version: v, Changed: true})
					case 3:
						snap := c
						snap.Version, snap.Disabled = v, r.IntN(2) == 0
						if r.IntN(2) == 0 {
							snap.VerifiedAtMs, snap.VerifiedBy = ms, "bulk"
						} else {
							snap.VerifiedAtMs, snap.VerifiedBy = 0, ""
						}
						snaps = append(snaps, snap)
					}
				}
				if _, err := s.ApplyEvents(ctx, evs); err != nil {
					errs <- err
					return
				}
				if err := s.ApplySnapshots(ctx, snaps); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var used int64
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM code_used`).Scan(&used); err != nil {
		t.Fatal(err)
	}
	if d := usedDrift(t, s); len(d) > 0 {
		t.Fatalf("after %d writers' events: %d differences:\n%s", writers, len(d), strings.Join(d, "\n"))
	}
	if used == 0 {
		t.Fatal("no code ended used: the mix did not exercise code_used")
	}
	now := time.Now().Unix()
	for _, p := range []contract.Project{p1, p2} {
		st, recent, err := s.ProjectStatistics(ctx, p.ID, now, 10)
		if err != nil {
			t.Fatal(err)
		}
		if st != bruteStats(t, s, p.ID, now) {
			t.Errorf("project %s: statistics %+v, brute force %+v", p.ID, st, bruteStats(t, s, p.ID, now))
		}
		if want := min(st.UsedCodes, 10); int64(len(recent)) != want {
			t.Errorf("project %s: %d recent verifications, want %d", p.ID, len(recent), want)
		}
		for i := 1; i < len(recent); i++ {
			if recent[i].VerifiedAt > recent[i-1].VerifiedAt {
				t.Errorf("recent verifications out of order: %+v", recent)
			}
		}
	}
	if _, err := s.Pool().Exec(ctx, `TRUNCATE codes CASCADE`); err != nil {
		t.Fatal(err)
	}
	if d := usedDrift(t, s); len(d) > 0 {
		t.Fatalf("after truncate: %s", strings.Join(d, "\n"))
	}
}

// TestVerifyUpdatesStayOnPage holds the reason code_used exists: no index of codes reads a
// column a verify changes, so PostgreSQL updates the row in place of its page (HOT) without
// an entry in every index; and it checks that the verifies of a generated batch are in fact
// written so.
func TestVerifyUpdatesStayOnPage(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	rows, err := s.Pool().Query(ctx, `SELECT indexrelid::regclass::text FROM pg_index
		WHERE indrelid = 'codes'::regclass AND pg_get_indexdef(indexrelid) ~ '(verified_at|verified_by|version)'`)
	if err != nil {
		t.Fatal(err)
	}
	named, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(named) > 0 {
		t.Fatalf("indexes of codes name a column a verify changes: %v", named)
	}

	p := mustProject(t, s, nil)
	codes := insertNumbered(t, s, p.ID, "HOT", 5000)
	counts := func() (upd, hot int64) {
		t.Helper()
		if _, err := s.Pool().Exec(ctx, `SELECT pg_stat_clear_snapshot()`); err != nil {
			t.Fatal(err)
		}
		if err := s.Pool().QueryRow(ctx, `SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relid = 'codes'::regclass`).Scan(&upd, &hot); err != nil {
			t.Fatal(err)
		}
		return upd, hot
	}
	// The backends report their counts at most once a second, or after 10 s idle.
	settled := func(want int64) (upd, hot int64) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			upd, hot = counts()
			if upd >= want || time.Now().After(deadline) {
				return upd, hot
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	upd0, hot0 := settled(0)
	r := rand.New(rand.NewPCG(3, 4))
	order := r.Perm(len(codes))[:1000]
	ms := time.Now().UnixMilli()
	for b := 0; b < len(order); b += 100 {
		var evs []contract.Event
		for _, i := range order[b : b+100] {
			evs = append(evs, verifyEvent(codes[i], 1, ms, "till"))
		}
		if _, err := s.ApplyEvents(ctx, evs); err != nil {
			t.Fatal(err)
		}
	}
	upd, hot := settled(upd0 + int64(len(order)))
	upd, hot = upd-upd0, hot-hot0
	if upd < int64(len(order)) {
		t.Fatalf("statistics show %d updates of codes after %d verifies", upd, len(order))
	}
	if hot*10 < upd*9 {
		t.Errorf("%d of %d verify updates were heap-only, want at least 90%%", hot, upd)
	}
	t.Logf("%d of %d verify updates heap-only", hot, upd)
}

// TestTriggerPlansFollowTheBatch: the trigger statements that join a transition table (to the
// other or to a table) are planned for the rows at hand. In one session, after a first update of one code over an
// empty code_used (and a delete of one), the changes of 2,000 codes over 20,000 used ones (a
// verify, a verify again, a reactivate, a delete of used and unused codes) are planned for
// 2,000 rows, and never loop over a transition table for each
// row of the other side. A plan kept from the first statement did both (and scanned code_used
// for each row): a verify cost a hundred times more. auto_explain sends this session the
// plans of the statements inside the trigger, as notices.
func TestTriggerPlansFollowTheBatch(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	p := mustProject(t, s, nil)
	codes := insertNumbered(t, s, p.ID, "PL", 25_000)
	ids := make([]string, len(codes))
	for i, c := range codes {
		ids[i] = c.ID
	}
	conn, plans := explainSession(t, s)
	const verify = `UPDATE codes SET verified_at = clock_timestamp(), version = version + 1 WHERE id = ANY($1::uuid[])`
	const reactivate = `UPDATE codes SET verified_at = NULL, version = version + 1 WHERE id = ANY($1::uuid[])`
	const remove = `DELETE FROM codes WHERE id = ANY($1::uuid[])`
	if _, err := conn.Exec(ctx, verify, ids[:1]); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, remove, ids[len(ids)-1:]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, verify, ids[1:20_001]); err != nil {
		t.Fatal(err)
	}
	const batch = 2_000
	for _, step := range []struct {
		name, sql string
		ids       []string
	}{
		{"verify", verify, ids[20_001 : 20_001+batch]},
		{"verify again", verify, ids[20_001 : 20_001+batch]},
		{"reactivate", reactivate, ids[1 : 1+batch]},
		{"delete", remove, append(ids[22_001:22_001+batch/2:22_001+batch/2], ids[batch+1:batch+1+batch/2]...)},
	} {
		plans() // the plans so far: not this step's
		if _, err := conn.Exec(ctx, step.sql, step.ids); err != nil {
			t.Fatal(err)
		}
		got := plans()
		joins := 0
		for _, doc := range got {
			// Statements over the transition tables without a join (code_counts' aggregate)
			// cost n log n whatever their plan; the joins are what a kept plan makes grow.
			if doc.Plan.tuplestoreRows() == 0 || !doc.Plan.joins() {
				continue
			}
			joins++
			if rows := doc.Plan.tuplestoreRows(); rows < batch/10 {
				t.Errorf("%s: planned for %.0f rows of a transition table, not the %d at hand:\n%s", step.name, rows, batch, doc.Text)
			}
			if doc.Plan.rescans() {
				t.Errorf("%s: a nested loop rescans a transition table for every row of the other side:\n%s", step.name, doc.Text)
			}
		}
		if joins < 2 {
			t.Fatalf("%s: %d plans of trigger statements joining a transition table among %d plans, want 2", step.name, joins, len(got))
		}
	}
	if d := usedDrift(t, s); len(d) > 0 {
		t.Fatalf("code_used: %s", strings.Join(d, "\n"))
	}
}

// TestBulkUsedReadsCodeUsed: a bulk change of the used codes finds them through code_used, not
// by reading every code of the project: in a project of 30,000 codes with 30 used, counting
// them and reading their pages reads about that many code rows.
func TestBulkUsedReadsCodeUsed(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	p := mustProject(t, s, nil)
	codes := insertNumbered(t, s, p.ID, "BU", 30_000)
	var evs []contract.Event
	for i := 7; i < len(codes); i += 1000 {
		evs = append(evs, verifyEvent(codes[i], 1, time.Now().UnixMilli(), "till"))
	}
	if _, err := s.ApplyEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	if err := s.AfterBulkLoad(ctx); err != nil {
		t.Fatal(err)
	}
	f := contract.CodeFilter{State: contract.StateUsed}
	now := time.Now().Unix()
	if n, err := s.CountBulk(ctx, p.ID, f, now); err != nil || n != int64(len(evs)) {
		t.Fatalf("count: %d, %v; want %d", n, err, len(evs))
	}
	var got int
	for after := int64(0); ; {
		page, last, err := s.BulkPage(ctx, p.ID, f, now, after, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, c := range page {
			if c.VerifiedAtMs == 0 {
				t.Fatalf("bulk page of used codes holds unused %s", c.Code)
			}
		}
		got += len(page)
		after = last
	}
	if got != len(evs) {
		t.Fatalf("bulk pages: %d used codes, want %d", got, len(evs))
	}
	count, countArgs, page, pageArgs, err := s.BulkSQL(ctx, p.ID, f, now, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for name, q := range map[string]struct {
		sql  string
		args []any
	}{"count": {count, countArgs}, "page": {page, pageArgs}} {
		var text string
		if err := s.Pool().QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) `+q.sql, q.args...).Scan(&text); err != nil {
			t.Fatal(err)
		}
		var docs []explainedStatement
		if err := json.Unmarshal([]byte(text), &docs); err != nil || len(docs) != 1 {
			t.Fatalf("%s: plan: %v\n%s", name, err, text)
		}
		if n := docs[0].Plan.visited("codes"); n > float64(3*len(evs)) {
			t.Errorf("%s reads %.0f code rows to find %d used codes:\n%s", name, n, len(evs), text)
		}
	}
}
