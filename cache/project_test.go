package cache_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/internal/testkit"
)

// codesInShards stores n codes of the fixture's project and returns their values and the
// shards they landed in.
func (f *fixture) codesInShards(prefix string, n int) (values []string, shards map[int]bool) {
	f.t.Helper()
	shards = map[int]bool{}
	for i := 0; i < n; i++ {
		v := fmt.Sprintf("%s-%04d", prefix, i)
		f.code(v, contract.CodeRecord{})
		values = append(values, v)
		shards[cache.ShardOf(f.pid, v)] = true
	}
	return values, shards
}

// Every shard holds a copy of the project's state; a publish reaches them all before it
// returns, and a copy of an older version of the row never replaces a newer one.
func TestProjectCopiesKeepTheNewestVersion(t *testing.T) { testkit.OnEachRedis(t, testProjectCopies) }

func testProjectCopies(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	// 1,000 random codes reach about 251 of 256 shards; fewer than three quarters would take
	// a hash gone wrong (400 codes, as before, fell short of it about one run in fifteen).
	values, shards := f.codesInShards("V", 1000)
	if len(shards) < cache.Shards*3/4 {
		t.Fatalf("1,000 codes reached only %d shards", len(shards))
	}
	// Reactivating unused codes changes nothing: CODE_ALREADY_UNUSED, unless the project
	// refuses first; verifying them past the project's expiry neither (CODE_EXPIRED).
	verifyAll := func(want contract.ErrorCode) {
		t.Helper()
		a := contract.ActionReactivate
		if want == contract.CodeExpired {
			a = contract.ActionVerify
		}
		if want == "" {
			want = contract.CodeAlreadyUnused
		}
		for _, v := range values {
			if r := f.apply(f.call(a, v)); r.Outcome.Error != want {
				t.Fatalf("%s (shard %d): %+v, want %q", v, cache.ShardOf(f.pid, v), r.Outcome, want)
			}
		}
	}
	p := contract.Project{ID: f.pid, Status: true}
	if err := f.c.PublishProject(ctx, p, 3); err != nil {
		t.Fatal(err)
	}
	verifyAll("")
	p.Status = false
	if err := f.c.PublishProject(ctx, p, 2); err != nil {
		t.Fatal(err)
	}
	verifyAll("") // version 2 is older than the 3 every shard holds
	if err := f.c.PublishProject(ctx, p, 4); err != nil {
		t.Fatal(err)
	}
	verifyAll(contract.ProjectDisabled)
	past := int64(1_700_000_000)
	if err := f.c.PublishProject(ctx, contract.Project{ID: f.pid, Status: true, ExpiresAt: &past}, 4); err != nil {
		t.Fatal(err) // an equal version carries the same state in production; here it shows a tie is written
	}
	verifyAll(contract.CodeExpired)
	// Version 0 cannot undo any versioned state.
	if err := f.c.PublishProject(ctx, contract.Project{ID: f.pid, Status: false}, 0); err != nil {
		t.Fatal(err)
	}
	verifyAll(contract.CodeExpired)
}

// A shard that lacks the project's copy loads it from the Loader for itself alone: the verify
// that found it missing waits for one Postgres read, the other shards are not touched.
func TestProjectMissLoadsOneShard(t *testing.T) { testkit.OnEachRedis(t, testProjectMissLoadsOneShard) }

func testProjectMissLoadsOneShard(t *testing.T) {
	ctx := context.Background()
	l := newFakeLoader()
	f := newFixture(t, cache.WithLoader(l))
	f.pid = contract.NewID() // a project Redis has never seen
	l.addProject(contract.Project{ID: f.pid, Status: true})
	var a, b string
	for i := 0; b == ""; i++ {
		v := fmt.Sprintf("M-%d", i)
		switch {
		case a == "":
			a = v
		case cache.ShardOf(f.pid, v) != cache.ShardOf(f.pid, a):
			b = v
		}
	}
	f.code(a, contract.CodeRecord{})
	f.code(b, contract.CodeRecord{})
	if r := f.apply(f.call(contract.ActionVerify, a)); !r.Outcome.Success() {
		t.Fatalf("verify %s: %+v", a, r.Outcome)
	}
	if n := l.projectCalls(f.pid); n != 1 {
		t.Fatalf("%d project loads, want 1", n)
	}
	held := 0
	for s := 0; s < cache.Shards; s++ {
		n, err := f.rdb.Exists(ctx, cache.ShardPrefix(s)+"p:"+f.pid).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 && s != cache.ShardOf(f.pid, a) {
			t.Fatalf("shard %d holds a copy it never needed", s)
		}
		held += int(n)
	}
	if held != 1 {
		t.Fatalf("%d shards hold a copy, want 1", held)
	}
	if r := f.apply(f.call(contract.ActionVerify, b)); !r.Outcome.Success() {
		t.Fatalf("verify %s: %+v", b, r.Outcome)
	}
	if n := l.projectCalls(f.pid); n != 2 {
		t.Fatalf("%d project loads after a second shard needed it, want 2", n)
	}
	// A publish of a newer version replaces the loaded copies; an older one would not.
	l.addProject(contract.Project{ID: f.pid, Status: false}) // version 2
	if err := f.c.PublishProject(ctx, contract.Project{ID: f.pid, Status: false}, 2); err != nil {
		t.Fatal(err)
	}
	if r := f.apply(f.call(contract.ActionVerify, a)); r.Outcome.Error != contract.ProjectDisabled {
		t.Fatalf("after the disable: %+v", r.Outcome)
	}
	if err := f.c.PublishProject(ctx, contract.Project{ID: f.pid, Status: true}, 1); err != nil {
		t.Fatal(err)
	}
	if r := f.apply(f.call(contract.ActionVerify, b)); r.Outcome.Error != contract.ProjectDisabled {
		t.Fatalf("an older version put the project back: %+v", r.Outcome)
	}
}

// The token bucket is in the API key's slot, taken before the verify script runs in the
// code's: a request the script refuses (replay, Idempotency-Key conflict) or that fails gets
// its token back, so only answered requests cost one, across every shard of the key's codes.
func TestRateLimitSpansShards(t *testing.T) { testkit.OnEachRedis(t, testRateLimitSpansShards) }

func testRateLimitSpansShards(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	values, shards := f.codesInShards("R", 6)
	if len(shards) < 2 {
		t.Fatalf("6 codes in %d shard", len(shards))
	}
	limit := contract.RateLimit{Rate: 0.001, Burst: 3} // no refill within the test
	op := func(v string) contract.Operation {
		o := f.call(contract.ActionVerify, v)
		o.Limit = limit
		return o
	}
	first := op(values[0])
	if r, err := f.c.Apply(ctx, first); err != nil || !r.Outcome.Success() || r.Rate.Remaining != 2 {
		t.Fatalf("first: %+v %v", r, err)
	}
	// Refused by the script: the token comes back.
	if _, err := f.c.Apply(ctx, first); !errors.Is(err, contract.ErrReplayed) {
		t.Fatalf("replay: %v", err)
	}
	idem := op(values[1])
	idem.IdempotencyKey, idem.RequestHash = "order-1", "h1"
	if r, err := f.c.Apply(ctx, idem); err != nil || !r.Outcome.Success() || r.Rate.Remaining != 1 {
		t.Fatalf("idempotent verify: %+v %v", r, err)
	}
	conflict := op(values[1])
	conflict.IdempotencyKey, conflict.RequestHash = "order-1", "h2"
	if _, err := f.c.Apply(ctx, conflict); !errors.Is(err, contract.ErrIdempotencyConflict) {
		t.Fatalf("conflict: %v", err)
	}
	// One token is left, whichever shard the next code lives in; then the bucket is empty.
	if r, err := f.c.Apply(ctx, op(values[2])); err != nil || !r.Outcome.Success() || r.Rate.Remaining != 0 {
		t.Fatalf("third: %+v %v", r, err)
	}
	for _, v := range values[3:] {
		r, err := f.c.Apply(ctx, op(v))
		if !errors.Is(err, contract.ErrRateLimited) || r.Rate.Wait <= 0 {
			t.Fatalf("%s over the limit: %+v %v", v, r, err)
		}
		if live, _ := f.live(v); live.VerifiedAtMs != 0 {
			t.Fatalf("a rate-limited verify redeemed %s", v)
		}
	}
	// GETs share the bucket.
	if _, err := f.c.Admit(ctx, contract.Admission{ProjectID: f.pid, KeyID: first.KeyID, ReplayKey: "g1", Limit: limit, Now: f.clock}); !errors.Is(err, contract.ErrRateLimited) {
		t.Fatalf("a read with the bucket empty: %v", err)
	}
	if n := len(f.outbox()); n != 3 {
		t.Fatalf("%d log events, want 3", n)
	}
}
