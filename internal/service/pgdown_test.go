package service_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acv/acv/api/client"
	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/testkit"
)

// pgOutage is how long PostgreSQL stays down in TestVerifyWithoutPostgres.
const pgOutage = 60 * time.Second

// TestVerifyWithoutPostgres kills PostgreSQL (as `pg_ctl stop -m immediate` would) under a
// verify and reactivate load across two replicas and keeps it down for a minute. Verify and
// reactivate keep succeeding: authentication reads the key mirror in Redis and the codes are
// in Redis; only the reads PostgreSQL serves may fail, and then with 503. A key revoked during
// the outage is refused within the key cache's TTL. When PostgreSQL is back, every
// acknowledged operation's log arrives, once.
func TestVerifyWithoutPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute-long outage")
	}
	pg := testkit.StartOwnPostgres(t)
	s := testkit.NewStackOn(t, pg.URL())
	bases := s.StartAPIs(2)
	s.StartPipeline("relay")
	tn := s.NewTenant(nil, bases...)
	doomed, err := s.Admin.CreateAPIKey(context.Background(), tn.ProjectID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	const codes = 400
	values := make([]string, codes)
	for i := range values {
		values[i] = fmt.Sprintf("PGD-%04d", i)
	}
	s.ImportCodes(tn.ProjectID, nil, values...)
	doomedClient := s.Client(bases[0], doomed.ID, doomed.Secret)
	ctx := context.Background()
	if _, err := doomedClient.Project(ctx, tn.ProjectID); err != nil {
		t.Fatalf("the key to revoke works before the outage: %v", err)
	}

	// Each worker owns codes and cycles them verify → reactivate; every answer must succeed.
	var (
		stop                atomic.Bool
		acked, readsRefused atomic.Int64
		readsOK, opFailures atomic.Int64
		wg                  sync.WaitGroup
		mu                  sync.Mutex
		firstFailure        error
	)
	fail := func(err error) {
		opFailures.Add(1)
		mu.Lock()
		if firstFailure == nil {
			firstFailure = err
		}
		mu.Unlock()
	}
	const workers = 8
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := tn.Clients[w%len(tn.Clients)]
			for round := 0; !stop.Load(); round++ {
				v := values[(w+round*workers)%codes]
				r, _, err := c.Verify(ctx, tn.ProjectID, contract.VerifyRequest{Code: v}, client.Options{})
				if err != nil || !r.Success {
					fail(fmt.Errorf("verify %s: %+v %v", v, r, err))
					continue
				}
				acked.Add(1)
				rr, _, err := c.Reactivate(ctx, tn.ProjectID, contract.ReactivateRequest{Code: v}, client.Options{})
				if err != nil || !rr.Success {
					fail(fmt.Errorf("reactivate %s: %+v %v", v, rr, err))
					continue
				}
				acked.Add(1)
				// Reads of PostgreSQL may fail while it is down, but only with 503.
				if _, err := c.ListCodes(ctx, tn.ProjectID, client.ListParams{PageSize: 5}); err != nil {
					var ce *client.Error
					if !errors.As(err, &ce) || ce.Status != http.StatusServiceUnavailable {
						fail(fmt.Errorf("list during the outage answered %v, want 503", err))
					}
					readsRefused.Add(1)
				} else {
					readsOK.Add(1)
				}
				// A steady load, not a flood: the point is continuity, and the backlog built
				// during the outage must drain in the test's time.
				time.Sleep(20 * time.Millisecond)
			}
		}(w)
	}

	time.Sleep(2 * time.Second)
	pg.Kill()
	t.Logf("postgres killed after %d acknowledged operations", acked.Load())
	downAt := time.Now()
	time.Sleep(2 * time.Second)

	// Revocation during the outage: Redis has it at once, Postgres cannot record it yet.
	if err := s.Admin.RevokeAPIKey(ctx, doomed.ID); err == nil {
		t.Error("revoking with postgres down reported success; want the error that says postgres did not record it")
	}
	revokedAt := time.Now()
	testkit.WaitFor(t, 2*time.Second+s.Config.KeyCacheTTL, "the revoked key refused", func() (bool, string) {
		_, err := doomedClient.Project(ctx, tn.ProjectID)
		var ce *client.Error
		if errors.As(err, &ce) && ce.Status == http.StatusUnauthorized {
			return true, ""
		}
		return false, fmt.Sprint(err)
	})
	t.Logf("revocation took effect %v after the command, with postgres down", time.Since(revokedAt).Round(time.Millisecond))

	time.Sleep(time.Until(downAt.Add(pgOutage)))
	duringOutage := acked.Load()
	pg.Start()
	t.Logf("postgres back after %v", time.Since(downAt).Round(time.Second))
	time.Sleep(3 * time.Second)
	stop.Store(true)
	wg.Wait()
	if n := opFailures.Load(); n > 0 {
		t.Fatalf("%d verify/reactivate/read failures, first: %v", n, firstFailure)
	}
	if duringOutage == 0 || readsRefused.Load() == 0 {
		t.Fatalf("the load did not run through the outage: %d operations, %d reads refused", duringOutage, readsRefused.Load())
	}
	total := int(acked.Load())
	s.WaitDrained(t, tn.ProjectID, total, 90*time.Second)
	// Every acknowledged operation has its log once: the count of success/reactivated rows.
	var success, reactivated int
	if err := s.Deps.Store.Pool().QueryRow(ctx,
		`SELECT count(*) FILTER (WHERE result = 'success'), count(*) FILTER (WHERE result = 'reactivated')
		 FROM verification_logs WHERE project_id = $1`, tn.ProjectID).Scan(&success, &reactivated); err != nil {
		t.Fatal(err)
	}
	if success+reactivated != total {
		t.Fatalf("%d success and %d reactivated logs for %d acknowledged operations", success, reactivated, total)
	}
	t.Logf("%d operations acknowledged (%d before postgres came back), %d reads answered, %d refused with 503; all logged once",
		total, duringOutage, readsOK.Load(), readsRefused.Load())
}

// TestRandomKeyFloodCostsNoQueries sends thousands of requests with made-up X-API-Key values
// (of the id's form, so they pass every check but the key's existence) while a real client
// works. They cost PostgreSQL no transaction: the key-id checksum and the mirror answer them.
// The real client's key stays cached and answered throughout.
func TestRandomKeyFloodCostsNoQueries(t *testing.T) {
	s := testkit.NewStack(t)
	base := s.StartAPI()
	tn := s.NewTenant(nil, base)
	ctx := context.Background()
	xacts := func() int64 {
		t.Helper()
		// The statistics of other sessions reach this view within a second of their commit.
		time.Sleep(1500 * time.Millisecond)
		var n int64
		if err := s.Deps.Store.Pool().QueryRow(ctx, `SELECT pg_stat_force_next_flush()`).Scan(new(any)); err != nil {
			t.Fatal(err)
		}
		if err := s.Deps.Store.Pool().QueryRow(ctx,
			`SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if _, err := tn.Clients[0].Project(ctx, tn.ProjectID); err != nil {
		t.Fatal(err)
	}
	before := xacts()
	const flooders, each = 8, 500
	var wg sync.WaitGroup
	var refused atomic.Int64
	for f := 0; f < flooders; f++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				c := s.Client(base, contract.NewID(), tn.Key.Secret)
				_, err := c.Project(ctx, tn.ProjectID)
				var ce *client.Error
				if errors.As(err, &ce) && ce.Status == http.StatusUnauthorized {
					refused.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	after := xacts()
	if refused.Load() != flooders*each {
		t.Fatalf("%d of %d made-up keys refused with 401", refused.Load(), flooders*each)
	}
	// The two statistics reads of this test are transactions of their own.
	extra := after - before - 2
	if limit := int64(flooders * each / 100); extra > limit {
		t.Fatalf("%d made-up keys cost %d postgres transactions, want at most %d (1%%)", flooders*each, extra, limit)
	}
	if _, err := tn.Clients[0].Project(ctx, tn.ProjectID); err != nil {
		t.Fatalf("the real key after the flood: %v", err)
	}
	t.Logf("%d made-up keys: %d extra postgres transactions", flooders*each, extra)
}
