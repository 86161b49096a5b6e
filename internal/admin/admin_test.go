package admin_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"github.com/acv/acv/internal/testkit"

	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/internal/admin"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// newAdmin gives a test an Admin wired as in production (its cache loads misses from the
// store), the Redis client under it, and a fresh project.
func newAdmin(t *testing.T) (*admin.Admin, *redis.Client, string) {
	t.Helper()
	a, _, rdb := testkit.NewAdmin(t)
	p, err := a.CreateProject(context.Background(), contract.NewProject{Name: "p"})
	if err != nil {
		t.Fatal(err)
	}
	return a, rdb, p.ID
}

func TestGenerateFillsBothStoresUniquely(t *testing.T) {
	a, _, pid := newAdmin(t)
	ctx := context.Background()
	// A code space of 2^6 = 64 values: the second batch must draw around collisions.
	spec := contract.GenerateSpec{Count: 40, Length: 6, Charset: "AB", Prefix: "P-", Suffix: "-S"}
	var last int
	n, err := a.Generate(ctx, pid, spec, func(done int) { last = done })
	if err != nil || n != 40 || last != 40 {
		t.Fatalf("generated %d (progress %d): %v", n, last, err)
	}
	if n, err = a.Generate(ctx, pid, contract.GenerateSpec{Count: 24, Length: 6, Charset: "AB", Prefix: "P-", Suffix: "-S"}, nil); err != nil || n != 24 {
		t.Fatalf("second batch: %d, %v", n, err)
	}
	if _, err := a.Generate(ctx, pid, spec, nil); err == nil || !strings.Contains(err.Error(), "exhausted") {
		t.Fatalf("a full code space must be reported, got %v", err)
	}
	st, err := a.Store.Statistics(ctx, pid, 0)
	if err != nil || st.TotalCodes != 64 {
		t.Fatalf("statistics %+v, %v", st, err)
	}
	var out bytes.Buffer
	if _, err := a.ExportCSV(ctx, pid, 0, &out); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&out).ReadAll()
	if err != nil || len(recs) != 65 {
		t.Fatalf("export has %d rows: %v", len(recs), err)
	}
	seen := map[string]bool{}
	for _, r := range recs[1:] {
		v := r[1]
		if seen[v] || !strings.HasPrefix(v, "P-") || !strings.HasSuffix(v, "-S") || len(v) != 10 {
			t.Fatalf("bad or repeated code %q", v)
		}
		seen[v] = true
		if _, found, err := a.Cache.LiveCode(ctx, pid, v); err != nil || !found {
			t.Fatalf("code %q not in redis: %v", v, err)
		}
	}
}

func TestImportSkipsDuplicatesAndBadRows(t *testing.T) {
	a, _, pid := newAdmin(t)
	ctx := context.Background()
	in := "code,expires_at\nAAA,\nBBB,1900000000\nAAA,\n"
	res, err := a.ImportCSV(ctx, pid, strings.NewReader(in), contract.ImportOptions{})
	if err != nil || res.Read != 3 || res.Inserted != 2 || res.Duplicates != 1 {
		t.Fatalf("import %+v, %v", res, err)
	}
	row, err := a.Store.CodeByValue(ctx, pid, "BBB")
	if err != nil || row.ExpiresAt == nil || *row.ExpiresAt != 1900000000 {
		t.Fatalf("BBB: %+v, %v", row, err)
	}
	res, err = a.ImportCSV(ctx, pid, strings.NewReader("CCC\nBAD\x01\n"), contract.ImportOptions{})
	if err != nil || res.Inserted != 1 || res.Invalid != 1 || len(res.Errors) != 1 || res.Errors[0].Line != 2 {
		t.Fatalf("bad row: %+v, %v", res, err)
	}
}

func TestDisableReachesHotPathAndRecord(t *testing.T) {
	a, rdb, pid := newAdmin(t)
	ctx := context.Background()
	if _, err := a.ImportCSV(ctx, pid, strings.NewReader("X1\n"), contract.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := a.SetCodeDisabled(ctx, pid, "X1", true); err != nil {
		t.Fatal(err)
	}
	s, found, err := a.Cache.LiveCode(ctx, pid, "X1")
	if err != nil || !found || !s.Disabled {
		t.Fatalf("redis state %+v, %v", s, err)
	}
	row, err := a.Store.CodeByValue(ctx, pid, "X1")
	if err != nil || !row.Disabled || row.Version != s.Version {
		t.Fatalf("postgres row %+v (redis version %d), %v", row, s.Version, err)
	}
	if err := a.SetCodeDisabled(ctx, pid, "NOPE", true); err == nil {
		t.Fatal("disabling an unknown code succeeded")
	}
	if err := a.SetProjectEnabled(ctx, pid, false); err != nil {
		t.Fatal(err)
	}
	// A cache without a loader: the answer must come from what the admin change put in Redis,
	// not from a load out of Postgres.
	hot := cache.New(rdb)
	r, err := hot.Apply(ctx, contract.Operation{Action: contract.ActionVerify, ProjectID: pid, KeyID: "k", Code: "X1",
		ReplayKey: contract.NewID(), EventID: contract.NewID(), Now: time.Now()})
	if err != nil || r.Outcome.Error != contract.ProjectDisabled {
		t.Fatalf("verify in a disabled project: %+v, %v", r, err)
	}
}

// TestDisableLoadsCodeRedisLacks covers a code Postgres holds and Redis does not (never loaded,
// or remembered as an unknown value): the cache loads it, then disables it, and both stores
// end at the same version.
func TestDisableLoadsCodeRedisLacks(t *testing.T) {
	a, _, pid := newAdmin(t)
	ctx := context.Background()
	if _, err := a.Store.InsertCodes(ctx, pid, []contract.NewCode{{Code: "PG-ONLY"}, {Code: "MARKED"}}); err != nil {
		t.Fatal(err)
	}
	if err := a.Cache.MarkUnknown(ctx, pid, "MARKED", time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"PG-ONLY", "MARKED"} {
		if _, found, err := a.Cache.LiveCode(ctx, pid, v); err != nil || found {
			t.Fatalf("%s: in redis before the change (found %v, %v)", v, found, err)
		}
		if err := a.SetCodeDisabled(ctx, pid, v, true); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		s, found, err := a.Cache.LiveCode(ctx, pid, v)
		if err != nil || !found || !s.Disabled || s.Version != 1 {
			t.Fatalf("%s: redis state %+v (found %v), %v", v, s, found, err)
		}
		row, err := a.Store.CodeByValue(ctx, pid, v)
		if err != nil || !row.Disabled || row.Version != s.Version || row.ID != s.ID {
			t.Fatalf("%s: postgres row %+v (redis %+v), %v", v, row, s, err)
		}
	}
}
