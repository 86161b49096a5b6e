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

// TestCodeValuesMigrationCopiesCodes: codes stored before the search moved to code_values are
// found after the migration.
func TestCodeValuesMigrationCopiesCodes(t *testing.T) {
	ctx := testCtx(t)
	s, url := storeAt(t, 11)
	p := mustProject(t, s, nil)
	rawCodes(t, s, p.ID, "OLD-A", "OLD-B", "NEW-C")
	if err := store.Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	if got := searchValues(t, s, p.ID, "old-", ""); !slices.Equal(got, []string{"OLD-B", "OLD-A"}) {
		t.Errorf("search after migration = %v", got)
	}
	mustInsert(t, s, p.ID, values("OLD-D")...)
	if got := searchValues(t, s, p.ID, "old-", ""); !slices.Equal(got, []string{"OLD-D", "OLD-B", "OLD-A"}) {
		t.Errorf("search after an insert = %v", got)
	}
}

// TestValueKeyMigration: the uniqueness of a value in its project moves to code_values and
// back with migration 00015, holding at every step; codes stored before are found by value.
func TestValueKeyMigration(t *testing.T) {
	ctx := testCtx(t)
	s, url := storeAt(t, 14)
	p := mustProject(t, s, nil)
	old := rawCodes(t, s, p.ID, "KEY-A", "KEY-B")
	refused := func(constraint string) {
		t.Helper()
		_, err := s.Pool().Exec(ctx, `INSERT INTO codes (id, project_id, code) VALUES ($1, $2, 'KEY-A')`, contract.NewID(), p.ID)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "23505" || pgErr.ConstraintName != constraint {
			t.Fatalf("duplicate value: %v, want a violation of %s", err, constraint)
		}
	}
	refused("codes_project_code_key")
	if err := store.Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	refused("code_values_project_code_key")
	if got, err := s.CodeByValue(ctx, p.ID, "KEY-B"); err != nil || got.ID != old[1].ID {
		t.Fatalf("code by value after migration: %+v, %v", got, err)
	}
	if got, err := s.ExistingValues(ctx, p.ID, []string{"KEY-A", "KEY-Z"}); err != nil || !slices.Equal(got, []string{"KEY-A"}) {
		t.Fatalf("existing values: %v, %v", got, err)
	}
	if _, err := s.CodeByValue(ctx, p.ID, "KEY-Z"); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("code by unknown value: %v", err)
	}
	if err := store.MigrateDownTo(ctx, url, 14); err != nil {
		t.Fatal(err)
	}
	refused("codes_project_code_key")
	if err := store.Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	refused("code_values_project_code_key")
	if got := mustInsert(t, s, p.ID, values("KEY-A", "KEY-C")...); len(got) != 1 || got[0].Code != "KEY-C" {
		t.Fatalf("insert after migrations: %+v, want KEY-C only", got)
	}
}
