package store_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/acv/acv/internal/testkit"
	"github.com/acv/acv/store"
)

func TestMigrateIdempotent(t *testing.T) {
	ctx := testCtx(t)
	url := testkit.PostgresDB(t)
	// Two replicas starting at once, then a restart.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = store.Migrate(ctx, url)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("concurrent migrate %d: %v", i, err)
		}
	}
	if err := store.Migrate(ctx, url); err != nil {
		t.Fatalf("second migrate: %v", err)
	}
	s, err := store.Open(ctx, url)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer s.Close()
	var applied int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM goose_db_version WHERE version_id > 0`).Scan(&applied); err != nil {
		t.Fatalf("read goose version table: %v", err)
	}
	if applied != store.MigrationCount() {
		t.Errorf("applied migrations recorded = %d, want %d", applied, store.MigrationCount())
	}
	for _, table := range []string{"projects", "api_keys", "codes", "verification_logs", "code_counts"} {
		var ok bool
		if err := s.Pool().QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&ok); err != nil || !ok {
			t.Errorf("table %s missing (err %v)", table, err)
		}
	}
}

// TestCheckSchema: a server refuses a database that lacks a migration it carries, naming
// `acv migrate`, and starts on one that has them all, or more (a newer binary migrated it
// already, during a rolling deploy).
func TestCheckSchema(t *testing.T) {
	ctx := testCtx(t)
	url := testkit.PostgresDB(t)
	err := store.CheckSchema(ctx, url)
	if !errors.Is(err, store.ErrSchemaBehind) || !strings.Contains(err.Error(), "acv migrate") {
		t.Fatalf("empty database: %v, want ErrSchemaBehind naming acv migrate", err)
	}
	if err := store.Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	if err := store.CheckSchema(ctx, url); err != nil {
		t.Fatalf("migrated database: %v", err)
	}
	s, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Pool().Exec(ctx, `INSERT INTO goose_db_version (version_id, is_applied)
		SELECT max(version_id) + 1, true FROM goose_db_version`); err != nil {
		t.Fatal(err)
	}
	if err := store.CheckSchema(ctx, url); err != nil {
		t.Fatalf("database migrated by a newer binary: %v", err)
	}
}
