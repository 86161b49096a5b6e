package store_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/store"
	"github.com/jackc/pgx/v5/pgconn"
)

// searchValues lists the values a search finds, newest first.
func searchValues(t *testing.T, s *store.Store, projectID, search string, st contract.State) []string {
	t.Helper()
	rows, total, err := s.ListCodes(testCtx(t), projectID, contract.ListQuery{Search: search, State: st, PageSize: 100}, time.Now().Unix())
	if err != nil {
		t.Fatalf("search %q: %v", search, err)
	}
	var out []string
	for _, r := range rows {
		out = append(out, r.Code)
	}
	if total != int64(len(out)) {
		t.Errorf("search %q: total %d, rows %d", search, total, len(out))
	}
	return out
}

// TestSearchAfterStateChanges: search reads code_values, which verifies never write; a code
// stays findable through every state change, by value and state together, and a project's
// deleted codes leave it.
func TestSearchAfterStateChanges(t *testing.T) {
	ctx := testCtx(t)
	s := newStore(t)
	p := mustProject(t, s, nil)
	other := mustProject(t, s, nil)
	recs := mustInsert(t, s, p.ID, values("SALE-1", "SALE-2", "WINTER-1")...)
	mustInsert(t, s, other.ID, values("SALE-9")...)

	now := time.Now().UnixMilli()
	if _, err := s.ApplyEvents(ctx, []contract.Event{{ID: contract.NewID(), CodeID: recs[0].ID, ProjectID: p.ID,
		Action: contract.ActionVerify, Result: "success", IP: "127.0.0.1", TS: now, Version: 1, Changed: true, VerifiedAt: now}}); err != nil {
		t.Fatal(err)
	}
	if got := searchValues(t, s, p.ID, "sale", ""); !slices.Equal(got, []string{"SALE-2", "SALE-1"}) {
		t.Errorf("search sale = %v", got)
	}
	if got := searchValues(t, s, p.ID, "sale", contract.StateUsed); !slices.Equal(got, []string{"SALE-1"}) {
		t.Errorf("search sale, used = %v", got)
	}
	if got := searchValues(t, s, p.ID, "sale", contract.StateUnused); !slices.Equal(got, []string{"SALE-2"}) {
		t.Errorf("search sale, unused = %v", got)
	}

	var before int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM code_values`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `DELETE FROM codes WHERE project_id = $1`, p.ID); err != nil {
		t.Fatal(err)
	}
	if got := searchValues(t, s, p.ID, "sale", ""); len(got) != 0 {
		t.Errorf("search after delete = %v", got)
	}
	var after int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM code_values`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if before-after != 3 {
		t.Errorf("code_values lost %d rows with the project's 3 codes", before-after)
	}
	if got := searchValues(t, s, other.ID, "sale", ""); !slices.Equal(got, []string{"SALE-9"}) {
		t.Errorf("other project's search = %v", got)
	}
}

// TestValueKey: a value is unique in its project through code_values' key, for rows written by
// any SQL; lookups by value find the code, ExistingValues names the values a project holds, and
// InsertCodes skips them.
func TestValueKey(t *testing.T) {
	ctx := testCtx(t)
	s := newStore(t)
	p := mustProject(t, s, nil)
	other := mustProject(t, s, nil)
	old := mustInsert(t, s, p.ID, values("KEY-A", "KEY-B")...)
	_, err := s.Pool().Exec(ctx, `INSERT INTO codes (id, project_id, code) VALUES ($1, $2, 'KEY-A')`, contract.NewID(), p.ID)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" || pgErr.ConstraintName != "code_values_project_code_key" {
		t.Fatalf("duplicate value: %v, want a violation of code_values_project_code_key", err)
	}
	if got, err := s.CodeByValue(ctx, p.ID, "KEY-B"); err != nil || got.ID != old[1].ID {
		t.Fatalf("code by value: %+v, %v", got, err)
	}
	if got, err := s.ExistingValues(ctx, p.ID, []string{"KEY-A", "KEY-Z"}); err != nil || !slices.Equal(got, []string{"KEY-A"}) {
		t.Fatalf("existing values: %v, %v", got, err)
	}
	if _, err := s.CodeByValue(ctx, p.ID, "KEY-Z"); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("code by unknown value: %v", err)
	}
	if got := mustInsert(t, s, p.ID, values("KEY-A", "KEY-C")...); len(got) != 1 || got[0].Code != "KEY-C" {
		t.Fatalf("insert of a held value and a new one: %+v, want KEY-C only", got)
	}
	// Another project may hold the same value.
	if got := mustInsert(t, s, other.ID, values("KEY-A")...); len(got) != 1 {
		t.Fatalf("the same value in another project: %+v", got)
	}
}
