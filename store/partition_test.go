package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/store"
)

const day = 24 * time.Hour

// utcMidnight is the UTC midnight starting t's day.
func utcMidnight(t time.Time) time.Time { return t.UTC().Truncate(day) }

// partitionOf names the partition holding log id.
func partitionOf(t *testing.T, s *store.Store, id string) string {
	t.Helper()
	var name string
	if err := s.Pool().QueryRow(testCtx(t),
		`SELECT tableoid::regclass::text FROM verification_logs WHERE id = $1`, id).Scan(&name); err != nil {
		t.Fatalf("partition of log %s: %v", id, err)
	}
	return name
}

func logAt(c contract.CodeRecord, at time.Time) contract.Event {
	return contract.Event{ID: contract.NewID(), CodeID: c.ID, ProjectID: c.ProjectID, Action: contract.ActionVerify,
		Result: contract.ResultFailed, Reason: string(contract.CodeAlreadyUsed), IP: "10.0.0.9", TS: at.UnixMilli(), Version: 1}
}

func partitionNames(t *testing.T, s *store.Store) []string {
	t.Helper()
	parts, err := s.LogPartitions(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range parts {
		out = append(out, p.Name)
	}
	return out
}

func logIDs(t *testing.T, s *store.Store, codeID string) []string {
	t.Helper()
	logs, err := s.Logs(testCtx(t), codeID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, l := range logs {
		ids = append(ids, l.ID)
	}
	return ids
}

// TestLogPartitionBoundary writes logs on both sides of a day boundary and outside every
// partition, redelivers them, and reads the code's history across all of them.
func TestLogPartitionBoundary(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	p := mustProject(t, s, nil)
	c := mustInsert(t, s, p.ID, values("boundary")...)[0]
	now := time.Now()
	today := utcMidnight(now)
	midnight := today.Add(day)

	// The schema made today and the next 7 days, and the default partition.
	names := partitionNames(t, s)
	if len(names) != 9 || names[0] != store.PartitionName(today) || names[8] != "verification_logs_default" {
		t.Fatalf("partitions of a new database = %v", names)
	}

	before, after := logAt(c, midnight.Add(-time.Millisecond)), logAt(c, midnight)
	old, future := logAt(c, today.Add(-10*day+time.Hour)), logAt(c, today.Add(40*day))
	batch := []contract.Event{after, before, old, future}
	if n, err := s.ApplyEvents(ctx, batch); err != nil || n != 4 {
		t.Fatalf("apply = %d, %v; want 4", n, err)
	}
	for _, w := range []struct {
		ev   contract.Event
		part string
	}{
		{before, store.PartitionName(today)}, {after, store.PartitionName(midnight)},
		{old, "verification_logs_default"}, {future, "verification_logs_default"},
	} {
		if got := partitionOf(t, s, w.ev.ID); got != w.part {
			t.Errorf("log at %s in %s, want %s", time.UnixMilli(w.ev.TS).UTC(), got, w.part)
		}
	}
	wantIDs := []string{future.ID, after.ID, before.ID, old.ID}
	if got := logIDs(t, s, c.ID); !slices.Equal(got, wantIDs) {
		t.Errorf("history = %v, want %v (newest first)", got, wantIDs)
	}

	// A retry delivers the whole batch again, and the boundary events alone: nothing is written.
	if n, err := s.ApplyEvents(ctx, batch); err != nil || n != 0 {
		t.Fatalf("redelivered batch = %d, %v; want 0", n, err)
	}
	if n, err := s.ApplyEvents(ctx, []contract.Event{before, after, after}); err != nil || n != 0 {
		t.Fatalf("redelivered boundary events = %d, %v; want 0", n, err)
	}

	// Maintenance gives the stray days their partitions and moves their rows out of the default.
	res, err := s.MaintainLogPartitions(ctx, now, contract.DefaultLogPolicy())
	if err != nil {
		t.Fatal(err)
	}
	wantCreated := []string{store.PartitionName(today.Add(-10 * day)), store.PartitionName(today.Add(40 * day))}
	if !slices.Equal(res.Created, wantCreated) || res.Moved != 2 || len(res.Dropped) != 0 || res.Busy {
		t.Errorf("maintenance = %+v, want created %v, 2 moved", res, wantCreated)
	}
	if got := partitionOf(t, s, old.ID); got != wantCreated[0] {
		t.Errorf("old log moved to %s, want %s", got, wantCreated[0])
	}
	if got := partitionOf(t, s, future.ID); got != wantCreated[1] {
		t.Errorf("future log moved to %s, want %s", got, wantCreated[1])
	}
	// Once moved, a redelivery still conflicts: the event maps to its day's partition.
	if n, err := s.ApplyEvents(ctx, batch); err != nil || n != 0 {
		t.Fatalf("redelivered batch after the move = %d, %v; want 0", n, err)
	}
	if got := logIDs(t, s, c.ID); !slices.Equal(got, wantIDs) {
		t.Errorf("history after maintenance = %v, want %v", got, wantIDs)
	}
	if got := countLogs(t, s); got != 4 {
		t.Errorf("logs = %d, want 4", got)
	}
	// A second run has nothing left to do.
	if res, err := s.MaintainLogPartitions(ctx, now, contract.DefaultLogPolicy()); err != nil ||
		len(res.Created)+len(res.Dropped) != 0 || res.Moved+res.Purged != 0 {
		t.Errorf("second maintenance = %+v, %v; want nothing done", res, err)
	}
}

// TestLogRetention drops the partition wholly past the retention, and only that one.
func TestLogRetention(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	p := mustProject(t, s, nil)
	c := mustInsert(t, s, p.ID, values("retained")...)[0]
	now := time.Now()
	today := utcMidnight(now)

	// Partitions for three days 500 days ago, as a run then would have made them.
	if _, err := s.MaintainLogPartitions(ctx, today.Add(-500*day), contract.LogPolicy{Ahead: 2}); err != nil {
		t.Fatal(err)
	}
	d500, d499, d498 := today.Add(-500*day), today.Add(-499*day), today.Add(-498*day)
	e500, e499, e498 := logAt(c, d500.Add(23*time.Hour)), logAt(c, d499), logAt(c, d498.Add(time.Hour))
	eToday := logAt(c, now)
	stray := logAt(c, today.Add(-600*day)) // before every partition: in the default
	if n, err := s.ApplyEvents(ctx, []contract.Event{e500, e499, e498, eToday, stray}); err != nil || n != 5 {
		t.Fatalf("apply = %d, %v", n, err)
	}

	// Another process holds the maintenance lock: this run waits its turn and does nothing.
	conn, err := s.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, store.LogMaintenanceLock); err != nil {
		t.Fatal(err)
	}
	policy := contract.LogPolicy{Ahead: 7, RetentionDays: 499}
	if res, err := s.MaintainLogPartitions(ctx, now, policy); err != nil || !res.Busy || len(res.Dropped) != 0 {
		t.Errorf("run under another's lock = %+v, %v; want busy, nothing done", res, err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, store.LogMaintenanceLock); err != nil {
		t.Fatal(err)
	}
	conn.Release()

	// Retention 499 days: the cut-off is today's midnight minus 499 days, so the day 500 days
	// ago is wholly past it and the day 499 days ago is not.
	res, err := s.MaintainLogPartitions(ctx, now, policy)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{store.PartitionName(d500)}; !slices.Equal(res.Dropped, want) || res.Purged != 1 || res.Busy {
		t.Errorf("retention run = %+v, want dropped %v and 1 row purged from the default", res, want)
	}
	if got, want := logIDs(t, s, c.ID), []string{eToday.ID, e498.ID, e499.ID}; !slices.Equal(got, want) {
		t.Errorf("history after retention = %v, want %v", got, want)
	}
	names := partitionNames(t, s)
	if slices.Contains(names, store.PartitionName(d500)) || !slices.Contains(names, store.PartitionName(d499)) ||
		!slices.Contains(names, store.PartitionName(d498)) || !slices.Contains(names, store.PartitionName(today.Add(7*day))) {
		t.Errorf("partitions after retention = %v", names)
	}
	// Retention 0 keeps everything.
	if res, err := s.MaintainLogPartitions(ctx, now.Add(1000*day), contract.LogPolicy{Ahead: -1}); err != nil || len(res.Dropped) != 0 {
		t.Errorf("run keeping everything = %+v, %v", res, err)
	}
}
