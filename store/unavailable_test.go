package store_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/testkit"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestServerThatCannotServeIsUnavailable runs the store against a real PostgreSQL that is
// restarted as a standby that never leaves recovery: it answers every new connection with
// SQLSTATE 57P03 (cannot_connect_now, the code of "the database system is starting up"). Every
// read then fails as contract.KindUnavailable (503), never as an internal error (500), with the
// server's error still in the chain.
func TestServerThatCannotServeIsUnavailable(t *testing.T) {
	ctx := testCtx(t)
	// A server of its own: the shared one must stay up for the other tests. Its directory must
	// be reachable by the postgres user when the test runs as root.
	parent, err := os.MkdirTemp("", "acv-standby-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	if err := os.Chmod(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, "pg")
	pg, err := localenv.StartPostgres(ctx, dir, localenv.PostgresOptions{Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pg.Stop)
	s := testkit.MigratedStore(t, pg.URL("postgres"))
	p := mustProject(t, s, nil)

	pg.Stop()
	standby, err := localenv.StartPostgres(ctx, dir, localenv.PostgresOptions{Fast: true, Port: pg.Port, Standby: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(standby.Stop)

	// The pool's connection was ended by the first server's shutdown (57P01, also unavailable);
	// the next reads dial the standby and are refused with 57P03.
	reads := map[string]func() error{
		"project":    func() error { _, err := s.Project(ctx, p.ID); return err },
		"api key":    func() error { _, err := s.APIKey(ctx, contract.NewID()); return err },
		"statistics": func() error { _, err := s.Statistics(ctx, p.ID, time.Now().Unix()); return err },
		"list": func() error {
			_, _, err := s.ListCodes(ctx, p.ID, contract.ListQuery{Search: "x"}, time.Now().Unix())
			return err
		},
		"logs": func() error { _, err := s.Logs(ctx, contract.NewID(), 10); return err },
		"code": func() error { _, err := s.CodeByValue(ctx, p.ID, "NOPE"); return err },
	}
	refused := false
	for attempt := 0; attempt < 3; attempt++ {
		for name, read := range reads {
			err := read()
			if k := contract.KindOf(err); k != contract.KindUnavailable {
				t.Fatalf("%s from a server in recovery: kind %q, want %q: %v", name, k, contract.KindUnavailable, err)
			}
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) {
				switch pgErr.Code {
				case "57P03":
					refused = true
				case "57P01": // the first server's shutdown ended the pooled connection
				default:
					t.Fatalf("%s: SQLSTATE %s, want 57P03: %v", name, pgErr.Code, err)
				}
			}
		}
	}
	if !refused {
		t.Fatal("no read reached the standby and was refused with 57P03")
	}
}
