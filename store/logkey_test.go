package store_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/store"
)

// TestLogKeyMigration: migration 00018 gives verification_logs and every partition, whether
// the maintenance created it before the migration or after, the primary key (verified_at, id)
// and no second index on those columns; a redelivery still writes nothing; the down step
// brings back the key (id, verified_at) beside the time index, and up again replaces them.
func TestLogKeyMigration(t *testing.T) {
	ctx := testCtx(t)
	s, url := storeAt(t, 17)
	p := mustProject(t, s, nil)
	c := rawCodes(t, s, p.ID, "K-1")[0]
	now := time.Now()
	// ApplyEvents also counts refusals, in the column migration 00019 adds: there for these
	// events, gone again before the migrations run up.
	if _, err := s.Pool().Exec(ctx, `ALTER TABLE redemptions_hourly ADD COLUMN refused bigint NOT NULL DEFAULT 0`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MaintainLogPartitions(ctx, now, store.LogPolicy{Ahead: 1}); err != nil {
		t.Fatal(err)
	}
	// Today's partition, and a day a month ahead that has none yet: the default partition.
	evs := []contract.Event{verifyEvent(c, 1, now.UnixMilli(), "a"), verifyEvent(c, 2, now.AddDate(0, 1, 0).UnixMilli(), "b")}
	if n, err := s.ApplyEvents(ctx, evs); err != nil || n != 2 {
		t.Fatalf("events at version 17 = %d, %v", n, err)
	}
	if _, err := s.Pool().Exec(ctx, `ALTER TABLE redemptions_hourly DROP COLUMN refused`); err != nil {
		t.Fatal(err)
	}

	// The indexes of the log tables on (verified_at, id) or (id, verified_at), by table: the
	// key's columns and whether another index names them.
	def := regexp.MustCompile(`^CREATE (UNIQUE )?INDEX (\S+) ON \S+ USING btree \(([^)]*)\)$`)
	shapes := func() map[string][]string {
		t.Helper()
		rows, err := s.Pool().Query(ctx, `SELECT tablename, indexdef FROM pg_indexes WHERE tablename LIKE 'verification_logs%'`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string][]string{}
		for rows.Next() {
			var table, idx string
			if err := rows.Scan(&table, &idx); err != nil {
				t.Fatal(err)
			}
			m := def.FindStringSubmatch(idx)
			if m == nil || (m[3] != "verified_at, id" && m[3] != "id, verified_at") {
				continue
			}
			kind := "index"
			if strings.HasSuffix(m[2], "_pkey") {
				kind = "key"
			}
			out[table] = append(out[table], kind+" ("+m[3]+")")
		}
		for _, v := range out {
			slices.Sort(v)
		}
		return out
	}
	expect := func(step string, want ...string) {
		t.Helper()
		got := shapes()
		if len(got) < 4 { // the parent, today's, tomorrow's and the default partition at least
			t.Fatalf("%s: log tables %v", step, got)
		}
		for table, v := range got {
			if !slices.Equal(v, want) {
				t.Errorf("%s: %s has %v, want %v", step, table, v, want)
			}
		}
	}
	expect("version 17", "index (verified_at, id)", "key (id, verified_at)")

	if err := store.Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	// The maintenance after the migration gives the month-ahead day its partition.
	if res, err := s.MaintainLogPartitions(ctx, now, store.LogPolicy{Ahead: 1}); err != nil || res.Moved != 1 {
		t.Fatalf("maintenance after the migration: %+v, %v; want one row moved", res, err)
	}
	expect("up", "key (verified_at, id)")
	if n, err := s.ApplyEvents(ctx, evs); err != nil || n != 0 {
		t.Fatalf("redelivery after the migration = %d, %v; want 0", n, err)
	}
	if got := countLogs(t, s); got != 2 {
		t.Fatalf("%d logs, want 2", got)
	}

	if err := store.MigrateDownTo(ctx, url, 17); err != nil {
		t.Fatal(err)
	}
	expect("down", "index (verified_at, id)", "key (id, verified_at)")
	if err := store.Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	expect("up again", "key (verified_at, id)")
}
