package store_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/store"
)

func countLogs(t *testing.T, s *store.Store) int {
	t.Helper()
	var n int
	if err := s.Pool().QueryRow(testCtx(t), `SELECT count(*) FROM verification_logs`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func verifyEvent(c contract.CodeRecord, version, ms int64, by string) contract.Event {
	return contract.Event{ID: contract.NewID(), CodeID: c.ID, ProjectID: c.ProjectID, Action: contract.ActionVerify,
		Result: contract.ResultSuccess, VerifiedBy: by, IP: "10.0.0.1", TS: ms, Version: version,
		Changed: true, VerifiedAt: ms, StateBy: by}
}

func TestApplyEvents(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	p := mustProject(t, s, nil)
	rows := mustInsert(t, s, p.ID, values("c1", "c2", "c3")...)
	c1, c2, c3 := rows[0], rows[1], rows[2]
	t0 := time.Now().UnixMilli()

	e1 := verifyEvent(c1, 1, t0+123, "till-1")
	e2 := contract.Event{ID: contract.NewID(), CodeID: c1.ID, ProjectID: p.ID, Action: contract.ActionVerify, Result: contract.ResultFailed,
		Reason: string(contract.CodeAlreadyUsed), IP: "10.0.0.2", TS: t0 + 1500, Version: 1}
	e3 := contract.Event{ID: contract.NewID(), CodeID: c1.ID, ProjectID: p.ID, Action: contract.ActionReactivate, Result: contract.ResultReactivated,
		Reason: "customer returned", VerifiedBy: "support", IP: "::1", TS: t0 + 3000, Version: 2, Changed: true}
	e4 := verifyEvent(c2, 1, t0+4007, "")
	batch := []contract.Event{e3, e1, e4, e2}

	n, err := s.ApplyEvents(ctx, batch)
	if err != nil || n != 4 {
		t.Fatalf("first apply = %d, %v; want 4", n, err)
	}
	n, err = s.ApplyEvents(ctx, batch)
	if err != nil || n != 0 {
		t.Fatalf("redelivered batch = %d, %v; want 0", n, err)
	}
	n, err = s.ApplyEvents(ctx, []contract.Event{e2, e2, verifyEvent(c3, 1, t0, "x")})
	if err != nil || n != 1 {
		t.Fatalf("batch with an old event twice and a new one = %d, %v; want 1", n, err)
	}
	// A new event twice in one batch (Kafka may hold a message twice, and both can come in
	// one fetch) is written once: the plain insert meets the key, and the batch is written
	// again skipping what is stored.
	c4 := mustInsert(t, s, p.ID, values("c4")...)[0]
	e5 := verifyEvent(c4, 1, t0+5000, "till-2")
	n, err = s.ApplyEvents(ctx, []contract.Event{e5, verifyEvent(c4, 2, t0+5001, "till-2"), e5})
	if err != nil || n != 2 {
		t.Fatalf("batch with a new event twice = %d, %v; want 2", n, err)
	}
	if got := countLogs(t, s); got != 7 {
		t.Errorf("logs = %d, want 7", got)
	}
	// The hourly redemptions count each successful verify once, however often it came.
	var redeemed int64
	if err := s.Pool().QueryRow(ctx, `SELECT coalesce(sum(n), 0)::bigint FROM redemptions_hourly WHERE project_id = $1`, p.ID).Scan(&redeemed); err != nil || redeemed != 5 {
		t.Errorf("hourly redemptions = %d (%v), want 5 (e1, e4, c3's, e5 and c4's second)", redeemed, err)
	}
	if n, err := s.ApplyEvents(ctx, nil); n != 0 || err != nil {
		t.Errorf("empty batch = %d, %v", n, err)
	}
	bad := e1
	bad.ID = "nope"
	if _, err := s.ApplyEvents(ctx, []contract.Event{bad}); err == nil {
		t.Errorf("malformed event id accepted")
	}

	got1, _ := s.CodeByID(ctx, p.ID, c1.ID)
	if got1.VerifiedAtMs != 0 || got1.VerifiedBy != "" || got1.Version != 2 || got1.Disabled {
		t.Errorf("c1 after verify+reactivate = %+v", got1)
	}
	got2, _ := s.CodeByID(ctx, p.ID, c2.ID)
	if c := got2.Resource(nil, t0/1000); got2.VerifiedAtMs != t0+4007 || c.VerifiedAt == nil || *c.VerifiedAt != (t0+4007)/1000 ||
		got2.VerifiedBy != "" || c.VerifiedBy != nil || got2.Version != 1 {
		t.Errorf("c2 after verify = %+v, want verified at %d ms", got2, t0+4007)
	}

	logs, err := s.Logs(ctx, c1.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) != 3 {
		t.Fatalf("c1 logs = %+v", logs)
	}
	want := []contract.LogEntry{
		{ID: e3.ID, VerifiedAt: (t0 + 3000) / 1000, VerifiedBy: ptr("support"), IPAddress: "::1", Result: "reactivated", Action: "reactivate", Reason: ptr("customer returned")},
		{ID: e2.ID, VerifiedAt: (t0 + 1500) / 1000, VerifiedBy: nil, IPAddress: "10.0.0.2", Result: "failed", Action: "verify", Reason: ptr("CODE_ALREADY_USED")},
		{ID: e1.ID, VerifiedAt: (t0 + 123) / 1000, VerifiedBy: ptr("till-1"), IPAddress: "10.0.0.1", Result: "success", Action: "verify", Reason: nil},
	}
	for i := range want {
		if fmt.Sprint(logEntryString(logs[i])) != logEntryString(want[i]) {
			t.Errorf("log %d = %s, want %s", i, logEntryString(logs[i]), logEntryString(want[i]))
		}
	}
	if logs, _ := s.Logs(ctx, c1.ID, 1); len(logs) != 1 || logs[0].ID != e3.ID {
		t.Errorf("limited logs = %+v", logs)
	}
	if logs, err := s.Logs(ctx, contract.NewID(), 10); err != nil || logs == nil || len(logs) != 0 {
		t.Errorf("logs of unknown code = %v, %v; want empty", logs, err)
	}
	var ms int64
	if err := s.Pool().QueryRow(ctx, `SELECT (extract(epoch FROM verified_at) * 1000)::bigint FROM verification_logs WHERE id = $1`, e1.ID).Scan(&ms); err != nil || ms != t0+123 {
		t.Errorf("log verified_at = %d ms (%v), want %d", ms, err, t0+123)
	}
	checkStats(t, s, p.ID, t0/1000, contract.Statistics{TotalCodes: 4, UsedCodes: 3, UnusedCodes: 1})
}

func logEntryString(e contract.LogEntry) string {
	deref := func(p *string) string {
		if p == nil {
			return "<nil>"
		}
		return *p
	}
	return fmt.Sprintf("{%s %d by=%s ip=%s %s %s reason=%s}", e.ID, e.VerifiedAt, deref(e.VerifiedBy), e.IPAddress, e.Result, e.Action, deref(e.Reason))
}

func TestApplyEventsVersionOrder(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	p := mustProject(t, s, nil)
	rows := mustInsert(t, s, p.ID, values("a", "b")...)
	a, b := rows[0], rows[1]
	t0 := time.Now().UnixMilli()

	newer := verifyEvent(a, 5, t0, "new")
	older := contract.Event{ID: contract.NewID(), CodeID: a.ID, ProjectID: p.ID, Action: contract.ActionVerify, Result: contract.ResultSuccess,
		TS: t0 - 1000, Version: 3, Changed: true, Disabled: true}
	for i, batch := range [][]contract.Event{{newer}, {older}} {
		if n, err := s.ApplyEvents(ctx, batch); err != nil || n != 1 {
			t.Fatalf("batch %d = %d, %v", i, n, err)
		}
	}
	got, _ := s.CodeByID(ctx, p.ID, a.ID)
	if got.Version != 5 || got.Disabled || got.VerifiedAtMs != t0 || got.VerifiedBy != "new" {
		t.Errorf("older event overwrote newer state: %+v", got)
	}
	if err := s.ApplySnapshot(ctx, contract.CodeRecord{ID: a.ID, Version: 4}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.CodeByID(ctx, p.ID, a.ID); got.Version != 5 || got.VerifiedAtMs == 0 {
		t.Errorf("older snapshot overwrote newer state: %+v", got)
	}
	if err := s.ApplySnapshot(ctx, contract.CodeRecord{ID: a.ID, Version: 5, Disabled: true}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.CodeByID(ctx, p.ID, a.ID); got.Disabled {
		t.Errorf("snapshot of an equal version applied: %+v", got)
	}

	// Several events of one code in one batch, highest version last in neither order.
	v7 := contract.Event{ID: contract.NewID(), CodeID: b.ID, ProjectID: p.ID, Action: contract.ActionVerify, Result: contract.ResultSuccess,
		TS: t0, Version: 7, Changed: true, Disabled: true, VerifiedAt: t0, StateBy: "v7"}
	v6 := verifyEvent(b, 6, t0-1, "v6")
	v8failed := contract.Event{ID: contract.NewID(), CodeID: b.ID, ProjectID: p.ID, Action: contract.ActionVerify, Result: contract.ResultFailed,
		Reason: "CODE_DISABLED", TS: t0 + 1, Version: 8}
	if n, err := s.ApplyEvents(ctx, []contract.Event{v7, v8failed, v6}); err != nil || n != 3 {
		t.Fatalf("mixed batch = %d, %v", n, err)
	}
	got, _ = s.CodeByID(ctx, p.ID, b.ID)
	if got.Version != 7 || !got.Disabled || got.VerifiedBy != "v7" {
		t.Errorf("highest changed version did not win: %+v", got)
	}
	checkStats(t, s, p.ID, t0/1000, contract.Statistics{TotalCodes: 2, UsedCodes: 1, DisabledCodes: 1})

	// Two changed events of one version (the script never writes them, but a sink must not
	// depend on that): the lower event id wins, whatever the order within the batch.
	for i, order := range []bool{false, true} {
		c := mustInsert(t, s, p.ID, values(fmt.Sprintf("tie-%d", i))...)[0]
		lo, hi := verifyEvent(c, 2, t0, "lo"), verifyEvent(c, 2, t0, "hi")
		if lo.ID > hi.ID {
			lo.ID, hi.ID = hi.ID, lo.ID
		}
		batch := []contract.Event{lo, hi}
		if order {
			batch = []contract.Event{hi, lo}
		}
		if n, err := s.ApplyEvents(ctx, batch); err != nil || n != 2 {
			t.Fatalf("tie batch %d = %d, %v", i, n, err)
		}
		if got, _ := s.CodeByID(ctx, p.ID, c.ID); got.VerifiedBy != "lo" {
			t.Errorf("tie batch %d: state of %q won, want the lower event id's", i, got.VerifiedBy)
		}
	}
}

// TestApplyEventsConcurrent runs consumers with overlapping batches over the same codes, as
// after a Kafka rebalance: no error may surface and every count must come out exact.
func TestApplyEventsConcurrent(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	p := mustProject(t, s, nil)
	var vs []string
	for i := 0; i < 200; i++ {
		vs = append(vs, fmt.Sprintf("code-%02d", i))
	}
	codes := mustInsert(t, s, p.ID, values(vs...)...)
	t0 := time.Now().UnixMilli()
	var events []contract.Event
	final := map[string]contract.Event{}
	for i, c := range codes {
		// 5, 6 or 7 versions: the last one verifies, reactivates or disables.
		for v := int64(1); v <= int64(5+i%3); v++ {
			e := contract.Event{ID: contract.NewID(), CodeID: c.ID, ProjectID: p.ID, IP: "1.2.3.4", TS: t0 + v, Version: v, Changed: true}
			switch v % 3 {
			case 1:
				e.Action, e.Result, e.VerifiedAt, e.StateBy = contract.ActionVerify, contract.ResultSuccess, t0+v, "w"
			case 2:
				e.Action, e.Result = contract.ActionReactivate, contract.ResultReactivated
			case 0:
				e.Action, e.Result, e.Disabled = contract.ActionVerify, contract.ResultFailed, true
			}
			events = append(events, e)
			final[c.ID] = e
		}
	}

	const workers = 6
	rng := rand.New(rand.NewPCG(1, 2))
	plans := make([][]contract.Event, workers)
	for i, e := range events {
		// Every event goes to two or three workers; each worker sees them shuffled.
		for w := range workers {
			if w == i%workers || w == (i+1)%workers || rng.IntN(4) == 0 {
				plans[w] = append(plans[w], e)
			}
		}
	}
	for w := range plans {
		rng.Shuffle(len(plans[w]), func(i, j int) { plans[w][i], plans[w][j] = plans[w][j], plans[w][i] })
	}

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		inserted int
		errs     []error
	)
	start := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			plan := plans[w]
			for len(plan) > 0 {
				k := min(len(plan), 25+w*7)
				n, err := s.ApplyEvents(ctx, plan[:k])
				mu.Lock()
				inserted += n
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
				plan = plan[k:]
			}
		}()
	}
	wg.Wait()
	t.Logf("%d workers applied %d distinct events in %v", workers, len(events), time.Since(start))
	for _, err := range errs {
		t.Errorf("apply: %v", err)
	}
	if inserted != len(events) {
		t.Errorf("inserted reported %d, want %d", inserted, len(events))
	}
	if got := countLogs(t, s); got != len(events) {
		t.Errorf("logs = %d, want %d", got, len(events))
	}
	for _, c := range codes {
		got, _ := s.CodeByID(ctx, p.ID, c.ID)
		want := final[c.ID]
		if got.Version != want.Version || got.Disabled != want.Disabled || got.VerifiedAtMs != want.VerifiedAt {
			t.Errorf("code %s = %+v, want snapshot %+v", c.Code, got, want)
		}
	}
	want := bruteStats(t, s, p.ID, t0/1000)
	if want.TotalCodes != int64(len(codes)) || want.UsedCodes == 0 || want.UnusedCodes == 0 || want.DisabledCodes == 0 {
		t.Fatalf("fixture does not end in a mix of states: %+v", want)
	}
	checkStats(t, s, p.ID, t0/1000, want)
}
