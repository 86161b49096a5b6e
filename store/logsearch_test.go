package store_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/store"
)

// TestSearchLogsPlan checks that a console log search reads only the day partitions of its
// range, each through an index in (verified_at, id) order, and never scans a partition whole:
// with a project filter through verification_logs_project_idx, without through the primary key
// (verified_at, id).
func TestSearchLogsPlan(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	p1, p2 := mustProject(t, s, nil), mustProject(t, s, nil)
	// The logs end at noon today (UTC), whatever the time now: with the real time, a search of
	// the last hour run just after midnight met a today's partition of a few rows, which the
	// planner rightly scans whole.
	now := utcMidnight(time.Now()).Add(12 * time.Hour)
	// 60,000 logs over the 3 days before that (the default partition and today's), 1% of them
	// of project 1 (a project among many), then ANALYZE so the planner sees real sizes.
	if _, err := s.Pool().Exec(ctx,
		`INSERT INTO verification_logs (id, code_id, project_id, action, result, reason, verified_by, ip_address, verified_at)
		 SELECT gen_random_uuid(), gen_random_uuid(), CASE WHEN g % 100 = 0 THEN $1::uuid ELSE $2::uuid END, 'verify',
		        CASE WHEN g % 10 = 0 THEN 'success' ELSE 'failed' END, NULL, 'till-' || (g % 50), '10.0.' || (g % 7) || '.1',
		        $3::timestamptz - (g * interval '4 seconds')
		 FROM generate_series(1, 60000) g`, p1.ID, p2.ID, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `ANALYZE verification_logs`); err != nil {
		t.Fatal(err)
	}
	future := store.PartitionName(utcMidnight(now).Add(3 * day))
	for name, f := range map[string]contract.LogFilter{
		"project":            {ProjectID: p1.ID, From: now.Add(-24 * time.Hour), To: now.Add(time.Second)},
		"project and result": {ProjectID: p1.ID, Result: "success", From: now.Add(-24 * time.Hour), To: now.Add(time.Second)},
		"all projects":       {From: now.Add(-24 * time.Hour), To: now.Add(time.Second)},
		"verifier":           {VerifiedBy: "till-7", From: now.Add(-time.Hour), To: now.Add(time.Second)},
	} {
		plan, err := s.ExplainLogSearch(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(plan, "Seq Scan on verification_logs") {
			t.Errorf("%s: a partition is scanned whole:\n%s", name, plan)
		}
		if strings.Contains(plan, future) {
			t.Errorf("%s: reads %s, outside the range:\n%s", name, future, plan)
		}
		want := `verification_logs_(p\d{8}|default)_pkey`
		if f.ProjectID != "" {
			want = "project_id_verified_at_id_idx|verification_logs_project_idx"
		}
		if !regexp.MustCompile(want).MatchString(plan) {
			t.Errorf("%s: no index %s in the plan:\n%s", name, want, plan)
		}
	}
	// A range is required.
	if _, err := s.SearchLogs(ctx, contract.LogFilter{ProjectID: p1.ID}); err == nil {
		t.Fatal("a search without a time range was accepted")
	}
	rows, err := s.SearchLogs(ctx, contract.LogFilter{ProjectID: p1.ID, From: now.Add(-time.Hour), To: now.Add(time.Second), Limit: 1000})
	if err != nil || len(rows) != 9 {
		t.Fatalf("an hour of project 1: %d rows, %v", len(rows), err)
	}
}
