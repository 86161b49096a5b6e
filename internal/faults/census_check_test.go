package faults_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/cache"
	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/testkit"
	"github.com/acv/acv/store"
)

// The fault tests are only as good as their count: it must see a duplicated row, a missing
// one and a row of a code no verify redeemed, through the same SQL the tests use, and an outbox
// entry left pending by a relay.
func TestCensusCatchesDuplicatesGapsAndPendingEntries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pgURL := testkit.PostgresDB(t)
	if err := store.Migrate(ctx, pgURL); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	project := uuid.NewString()
	id := func() string { return strings.ReplaceAll(uuid.NewString(), "-", "") }
	logged, doubled, missing, stray, refused := id(), id(), id(), id(), id()
	insert := func(project, code, action, result string) {
		t.Helper()
		if _, err := pool.Exec(ctx, `INSERT INTO verification_logs (id, code_id, project_id, action, result, verified_at)
			VALUES ($1, $2, $3, $4, $5, now())`, uuid.NewString(), code, project, action, result); err != nil {
			t.Fatal(err)
		}
	}
	insert(project, logged, "verify", "success")
	insert(project, doubled, "verify", "success")
	insert(project, doubled, "verify", "success") // planted: the same verify logged twice
	insert(project, stray, "verify", "success")   // planted: a row no acknowledged verify explains
	insert(project, refused, "verify", "failed")  // a failed verify's row is not a success row
	insert(project, refused, "reactivate", "success")
	insert(uuid.NewString(), missing, "verify", "success") // another project's row

	rows, err := successRows(ctx, pool, project)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{logged: true, doubled: true, missing: true, refused: true}
	got := exactlyOnce(want, rows)
	if got.ok() {
		t.Fatalf("the count passed planted faults: %s", got)
	}
	if got.Logged != 1 || got.Rows != 4 ||
		!slices.Equal(got.Duplicated, []string{doubled}) ||
		!slices.Equal(got.Unexpected, []string{stray}) ||
		!slices.Equal(sorted(got.Missing), sorted([]string{missing, refused})) {
		t.Errorf("the count saw %s; want 1 logged of 4, 4 rows, %s doubled, %s stray, %s and %s missing",
			got, doubled, stray, missing, refused)
	}
	if clean := exactlyOnce(map[string]bool{logged: true}, map[string]int{logged: 1}); !clean.ok() {
		t.Errorf("a clean count fails: %s", clean)
	}

	r := testkit.RedisServer(t, localenv.RedisOptions{})
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer rdb.Close()
	if n, err := outboxLength(ctx, rdb); err != nil || n != 0 {
		t.Fatalf("an empty Redis: outbox %d, %v", n, err)
	}
	outbox := cache.Outboxes()[len(cache.Outboxes())-1]
	if err := rdb.RPush(ctx, outbox, "x").Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := outboxLength(ctx, rdb); err != nil || n != 1 {
		t.Errorf("an entry in an outbox: outbox %d, %v; want 1", n, err)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// The process helper's metric parser reads what the registry writes.
func TestParseMetrics(t *testing.T) {
	t.Parallel()
	m := localenv.ParseMetrics(`# HELP acv_dependency_up 1 when the dependency answered.
# TYPE acv_dependency_up gauge
acv_dependency_up{dependency="kafka"} 0
acv_dependency_up{dependency="redis"} 1
acv_relay_published_total 1234
acv_consumer_lag_messages{partition="0"} 5
acv_consumer_lag_messages{partition="1"} 7
`)
	if v, ok := m[`acv_dependency_up{dependency="kafka"}`]; !ok || v != 0 {
		t.Errorf("kafka up = %v, %v", v, ok)
	}
	if m.Sum("acv_relay_published_total") != 1234 || m.Sum("acv_consumer_lag_messages") != 12 {
		t.Errorf("sums: %v", m)
	}
	if m.Has("acv_consumer_lag") || !m.Has("acv_consumer_lag_messages") {
		t.Errorf("Has matches by whole name")
	}
}
