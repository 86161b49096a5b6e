package store_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
)

// TestLogKeyOnEveryPartition: verification_logs and every partition, whether the schema made
// it or the maintenance did, carry the exactly-once key (verified_at, id) and no second index
// on those columns; a redelivery after the maintenance moved rows writes nothing.
func TestLogKeyOnEveryPartition(t *testing.T) {
	ctx := testCtx(t)
	s := newStore(t)
	p := mustProject(t, s, nil)
	c := mustInsert(t, s, p.ID, values("K-1")...)[0]
	now := time.Now()
	// Today's partition, and a day a month ahead that has none yet: the default partition.
	evs := []contract.Event{verifyEvent(c, 1, now.UnixMilli(), "a"), verifyEvent(c, 2, now.AddDate(0, 1, 0).UnixMilli(), "b")}
	if n, err := s.ApplyEvents(ctx, evs); err != nil || n != 2 {
		t.Fatalf("events = %d, %v", n, err)
	}
	// The maintenance gives the month-ahead day its partition.
	if res, err := s.MaintainLogPartitions(ctx, now, contract.LogPolicy{Ahead: 1}); err != nil || res.Moved != 1 {
		t.Fatalf("maintenance: %+v, %v; want one row moved", res, err)
	}

	// The indexes of the log tables on (verified_at, id) or (id, verified_at), by table: the
	// key's columns and whether another index names them.
	def := regexp.MustCompile(`^CREATE (UNIQUE )?INDEX (\S+) ON (?:ONLY )?\S+ USING btree \(([^)]*)\)$`)
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
	expect := func(want ...string) {
		t.Helper()
		got := shapes()
		// The parent, the schema's 8 days, the maintenance's month-ahead day and the default.
		if len(got) != 11 {
			t.Fatalf("log tables %v", got)
		}
		for table, v := range got {
			if !slices.Equal(v, want) {
				t.Errorf("%s has %v, want %v", table, v, want)
			}
		}
	}
	expect("key (verified_at, id)")
	if n, err := s.ApplyEvents(ctx, evs); err != nil || n != 0 {
		t.Fatalf("redelivery = %d, %v; want 0", n, err)
	}
	if got := countLogs(t, s); got != 2 {
		t.Fatalf("%d logs, want 2", got)
	}
}
