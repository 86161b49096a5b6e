package store_test

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/testkit"
	"github.com/acv/acv/store"
)

var updateSchema = flag.Bool("update-schema", false, "rewrite testdata/schema.sql from a freshly migrated database")

// schemaFile is the schema the migrations give, as pg_dump writes it.
const schemaFile = "testdata/schema.sql"

// TestSchema: a database migrated from nothing holds exactly the schema of testdata/schema.sql.
// The file is the reviewed description of what the migrations build: a new migration comes
// with the file rewritten (go test ./store -run TestSchema -update-schema) in the same change,
// so a schema change nobody wrote down, or an edit of a migration already released, fails here.
//
// The day partitions of verification_logs are left out: their names and bounds are the day the
// database was migrated (TestLogPartitionBoundary checks them).
func TestSchema(t *testing.T) {
	ctx := testCtx(t)
	url := testkit.PostgresDB(t)
	if err := store.Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, pgDump(t), "--schema-only", "--no-owner",
		"--exclude-table=goose_db_version*", "--exclude-table=verification_logs_p*", "--dbname="+url).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	got := normalizeDump(string(out))
	if *updateSchema {
		header := "-- The schema store/migrations gives, as pg_dump --schema-only writes it, without the\n" +
			"-- dump's settings and verification_logs' day partitions. Written by\n" +
			"-- go test ./store -run TestSchema -update-schema; review its diff with the migration.\n\n"
		if err := os.WriteFile(schemaFile, []byte(header+got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	if want := normalizeDump(string(b)); got != want {
		t.Fatalf("the migrated schema differs from %s (if the change is meant, rewrite it with -update-schema and review the diff):\n%s",
			schemaFile, firstDifference(got, want))
	}
}

// pgDump is the pg_dump beside the PostgreSQL server the tests run, so their versions match.
func pgDump(t *testing.T) string {
	t.Helper()
	p := filepath.Join(localenv.PGBin, "pg_dump")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	p, err := exec.LookPath("pg_dump")
	if err != nil {
		t.Fatalf("pg_dump not found in %s or PATH: %v", localenv.PGBin, err)
	}
	return p
}

// normalizeDump keeps a dump's statements: it drops its comment lines (names, versions), its
// session settings and the \restrict lines that carry a random key, and runs of blank lines.
func normalizeDump(dump string) string {
	var b strings.Builder
	blank := false
	for _, line := range strings.Split(dump, "\n") {
		switch {
		case strings.HasPrefix(line, "--"), strings.HasPrefix(line, "SET "),
			strings.HasPrefix(line, "SELECT pg_catalog.set_config("),
			strings.HasPrefix(line, `\restrict `), strings.HasPrefix(line, `\unrestrict `):
			continue
		case line == "":
			blank = b.Len() > 0
			continue
		}
		if blank {
			b.WriteByte('\n')
			blank = false
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// firstDifference shows the first line where got and want part, with a few lines around it.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	i := 0
	for i < len(g) && i < len(w) && g[i] == w[i] {
		i++
	}
	window := func(lines []string) string {
		lo, hi := max(i-3, 0), min(i+4, len(lines))
		return strings.Join(lines[lo:hi], "\n")
	}
	return fmt.Sprintf("line %d of the statements\nmigrated:\n%s\n%s:\n%s", i+1, window(g), schemaFile, window(w))
}
