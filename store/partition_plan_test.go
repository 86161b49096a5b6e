package store_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acv/acv/store"
	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"
)

// planLogRows is how many log rows TestLogHistoryPlans generates: 10M, the acceptance's figure
// (ACV_PLAN_LOG_ROWS overrides it for a quicker run while developing).
func planLogRows(t *testing.T) int {
	n := 10_000_000
	if v := os.Getenv("ACV_PLAN_LOG_ROWS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 30_000 {
			t.Fatalf("ACV_PLAN_LOG_ROWS=%q: want an integer >= 30000", v)
		}
	}
	return n
}

// seqScans lists the partitions a plan reads sequentially.
func seqScans(plan string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`Seq Scan on (verification_logs_\w+)`).FindAllStringSubmatch(plan, -1) {
		out = append(out, m[1])
	}
	return out
}

// dayPartitions lists the distinct day partitions a plan reads.
func dayPartitions(plan string) map[string]bool {
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`on (verification_logs_p\d+)`).FindAllStringSubmatch(plan, -1) {
		out[m[1]] = true
	}
	return out
}

func explain(t *testing.T, ctx context.Context, conn interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, sql string, args ...any) string {
	t.Helper()
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return strings.Join(lines, "\n")
}

// TestLogHistoryPlans fills verification_logs with 10M rows over 30 past days (plus the days
// the migration made) and checks that a code's history, as Logs reads it (every limit, custom
// and generic plans), is an index seek into each partition and never a sequential scan, and
// that a history page bounded in time reads only the partitions of its range.
func TestLogHistoryPlans(t *testing.T) {
	s := newStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const (
		days  = 30
		codes = 100_000
	)
	total := planLogRows(t)
	perDay := total / days
	p := mustProject(t, s, nil)
	today := utcMidnight(time.Now())

	// Each day is loaded into a table of its own, indexed, then attached (as the maintenance
	// attaches): bulk index builds instead of 10M random B-tree inserts. Two loaders, for two
	// cores.
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(2)
	for i := 1; i <= days; i++ {
		d := today.Add(-time.Duration(i) * day)
		name := store.PartitionName(d)
		g.Go(func() error {
			conn, err := s.Pool().Acquire(gctx)
			if err != nil {
				return err
			}
			defer conn.Release()
			tx, err := conn.Begin(gctx)
			if err != nil {
				return err
			}
			defer tx.Rollback(ctx) //nolint:errcheck
			for _, q := range []string{
				`SET LOCAL synchronous_commit = off`,
				`SET LOCAL maintenance_work_mem = '256MB'`,
				// Unlogged: the test's database is thrown away, and the plans do not depend on
				// it; it saves writing 2 GB of WAL. The CHECK matches the bounds, so the attach
				// below does not scan the rows again.
				`CREATE UNLOGGED TABLE ` + name + ` (LIKE verification_logs INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`,
				fmt.Sprintf(`ALTER TABLE %s ADD CHECK (verified_at >= '%s' AND verified_at < '%s')`,
					name, d.Format(time.RFC3339), d.Add(day).Format(time.RFC3339)),
			} {
				if _, err := tx.Exec(gctx, q); err != nil {
					return fmt.Errorf("%s: %w", q, err)
				}
			}
			// Ids time-ordered like UUIDv7s; code ids cycle over 100k codes, so each code has
			// about 100 logs, 3 or 4 a day.
			if _, err := tx.Exec(gctx,
				`INSERT INTO `+name+` (id, code_id, project_id, action, result, reason, verified_by,
				                       ip_address, verified_at, received_at)
				 SELECT (lpad(to_hex($1::int), 8, '0') || '-0000-7000-8000-' || lpad(to_hex(g), 12, '0'))::uuid,
				        ('00000000-0000-4000-8000-' || lpad(to_hex(g % $4), 12, '0'))::uuid,
				        $2::uuid, 'verify', CASE WHEN g % 10 = 0 THEN 'success' ELSE 'failed' END,
				        CASE WHEN g % 10 = 0 THEN NULL ELSE 'CODE_ALREADY_USED' END, NULL, '10.0.0.1',
				        $3::timestamptz + (g::bigint * 86400000 / $5) * interval '1 millisecond', $3::timestamptz
				 FROM generate_series(0, $5 - 1) g`,
				i, p.ID, d, codes, perDay); err != nil {
				return fmt.Errorf("fill %s: %w", name, err)
			}
			for _, q := range []string{
				`ALTER TABLE ` + name + ` ADD PRIMARY KEY (verified_at, id)`,
				`CREATE INDEX ON ` + name + ` (code_id, verified_at DESC, id DESC)`,
				// Autovacuum analyzes partitions, never the partitioned table: so does the test.
				`ANALYZE ` + name,
			} {
				if _, err := tx.Exec(gctx, q); err != nil {
					return fmt.Errorf("%s: %w", q, err)
				}
			}
			return tx.Commit(gctx)
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	loaded := time.Since(start)
	for i := 1; i <= days; i++ {
		d := today.Add(-time.Duration(i) * day)
		if _, err := s.Pool().Exec(ctx, fmt.Sprintf(
			`ALTER TABLE verification_logs ATTACH PARTITION %s FOR VALUES FROM ('%s') TO ('%s')`,
			store.PartitionName(d), d.Format(time.RFC3339), d.Add(day).Format(time.RFC3339))); err != nil {
			t.Fatalf("attach: %v", err)
		}
	}
	attached := time.Since(start)
	for _, p := range []string{store.PartitionName(today), "verification_logs_default"} {
		if _, err := s.Pool().Exec(ctx, `ANALYZE `+p); err != nil {
			t.Fatal(err)
		}
	}
	var n int64
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM verification_logs`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d log rows in %d day partitions: generated, indexed and analyzed in %s, attached by %s, counted by %s",
		n, days, loaded.Round(time.Millisecond), attached.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	if n != int64(perDay*days) {
		t.Fatalf("rows = %d, want %d", n, perDay*days)
	}

	rows, err := s.Pool().Query(ctx,
		`SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		 WHERE i.inhparent = 'verification_logs'::regclass AND c.relpages > 0`)
	if err != nil {
		t.Fatal(err)
	}
	filledNames, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	filled := map[string]bool{}
	for _, name := range filledNames {
		filled[name] = true
	}
	if len(filled) != days {
		t.Fatalf("partitions holding rows = %v, want the %d days loaded", filledNames, days)
	}

	code := "00000000-0000-4000-8000-00000000002a" // code 42: one of the 100k, ~100 logs
	conn, err := s.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	checkIndexOnly := func(name, plan string, wantParts int) {
		t.Helper()
		t.Logf("%s:\n%s", name, plan)
		// The planner may scan an empty partition (the days ahead, the default) sequentially:
		// it has no page to read. A partition holding rows must be read through its index.
		for _, part := range seqScans(plan) {
			if filled[part] {
				t.Errorf("%s: sequential scan of %s, which holds rows", name, part)
			}
		}
		if !strings.Contains(plan, "Index Scan") {
			t.Errorf("%s: no index scan", name)
		}
		if got := len(dayPartitions(plan)); wantParts > 0 && got > wantParts {
			t.Errorf("%s: reads %d day partitions, want at most %d (pruned)", name, got, wantParts)
		}
	}
	for _, limit := range []any{int64(100), int64(1), nil} {
		plan := explain(t, ctx, conn, `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) `+store.CodeHistorySQL, code, limit)
		checkIndexOnly(fmt.Sprintf("history, limit %v", limit), plan, 0)
		if !strings.Contains(plan, "actual rows=") {
			t.Fatalf("no plan")
		}
	}
	// After five executions a prepared statement may switch to the generic plan: check it too.
	if _, err := conn.Exec(ctx, `PREPARE history AS `+store.CodeHistorySQL); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	checkIndexOnly("history, generic plan",
		explain(t, ctx, conn, `EXPLAIN (COSTS OFF) EXECUTE history('`+code+`', 100)`), 0)
	for _, q := range []string{`RESET plan_cache_mode`, `DEALLOCATE history`} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}

	// A page of a code's history bounded in time (keyset: older than the last row shown, within
	// a week) reads only that week's partitions.
	before := today.Add(-10 * day)
	checkIndexOnly("history page of one week",
		explain(t, ctx, conn, `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF)
			SELECT id, verified_at, verified_by, ip_address, result, action, reason
			FROM verification_logs
			WHERE code_id = $1 AND verified_at < $2 AND verified_at >= $3
			ORDER BY verified_at DESC, id DESC LIMIT 20`, code, before, before.Add(-7*day)), 7)

	// The history itself, through Logs.
	logs, err := s.Logs(ctx, strings.ReplaceAll(code, "-", ""), 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := total / codes; len(logs) < want-days || len(logs) > want+days {
		t.Errorf("history of code 42 = %d logs, want about %d", len(logs), want)
	}
}
