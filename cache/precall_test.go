package cache_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/testkit"
)

// An Idempotency-Key is claimed in its own slot before the code's shard: the key reused with a
// request naming another code, in any shard, is a 409 that changes nothing.
func TestIdempotencyKeyReusedWithAnotherCodeConflicts(t *testing.T) {
	testkit.OnEachRedis(t, testIdempotencyKeyReusedWithAnotherCodeConflicts)
}

func testIdempotencyKeyReusedWithAnotherCodeConflicts(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// Enough codes that some sit in other shards than the first.
	values := []string{"A", "B", "C", "D", "E", "F", "G", "H"}
	for _, v := range values {
		f.code(v, contract.CodeRecord{})
	}
	first := f.call(contract.ActionVerify, "A")
	first.IdempotencyKey, first.RequestHash = "order-1", "hA"
	if r := f.apply(first); !r.Outcome.Success() || r.Replayed {
		t.Fatalf("first: %+v", r)
	}
	for _, v := range values[1:] {
		other := f.call(contract.ActionVerify, v)
		other.IdempotencyKey, other.RequestHash = "order-1", "h"+v
		if r, err := f.c.Apply(ctx, other); !errors.Is(err, contract.ErrIdempotencyConflict) || r.Rate.Remaining != -1 {
			t.Fatalf("key reused with code %s: %+v, err %v, want ErrIdempotencyConflict", v, r, err)
		}
		if s, _ := f.live(v); s.VerifiedAtMs != 0 {
			t.Fatalf("the conflicting request redeemed %s", v)
		}
		// Nothing changed: the same request sent with a key of its own runs.
		other.IdempotencyKey = "order-" + v
		other.ReplayKey = contract.NewID()
		if r := f.apply(other); !r.Outcome.Success() {
			t.Fatalf("code %s with its own key: %+v", v, r)
		}
	}
	retry := f.call(contract.ActionVerify, "A")
	retry.IdempotencyKey, retry.RequestHash = "order-1", "hA"
	if r := f.apply(retry); !r.Replayed || !r.Outcome.Success() {
		t.Fatalf("retry of the first: %+v", r)
	}
	if n := len(f.outbox()); n != len(values) {
		t.Fatalf("%d log events, want %d", n, len(values))
	}
}

// A nonce sent with an Idempotency-Key is remembered in its own slot: reused with another
// code, it is a replay (401) before anything else; the request refused spends neither its claim
// nor, when refused for the rate limit, its nonce.
func TestNonceWithIdempotencyKeyCaughtAcrossCodes(t *testing.T) {
	testkit.OnEachRedis(t, testNonceWithIdempotencyKeyCaughtAcrossCodes)
}

func testNonceWithIdempotencyKeyCaughtAcrossCodes(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, v := range []string{"A", "B", "C"} {
		f.code(v, contract.CodeRecord{})
	}
	nonce := "n:" + contract.NewID()
	first := f.call(contract.ActionVerify, "A")
	first.ReplayKey, first.IdempotencyKey, first.RequestHash = nonce, "order-1", "hA"
	f.apply(first)
	for _, v := range []string{"B", "C"} {
		other := f.call(contract.ActionVerify, v)
		other.ReplayKey, other.IdempotencyKey, other.RequestHash = nonce, "order-"+v, "h"+v
		if r, err := f.c.Apply(ctx, other); !errors.Is(err, contract.ErrReplayed) || r.Rate.Remaining != -1 {
			t.Fatalf("nonce reused with code %s: %+v, err %v, want ErrReplayed", v, r, err)
		}
		// The refused request did not keep its claim: the key is still free for another body.
		fresh := f.call(contract.ActionVerify, v)
		fresh.IdempotencyKey, fresh.RequestHash = "order-"+v, "other-"+v
		if r := f.apply(fresh); !r.Outcome.Success() {
			t.Fatalf("key of a replayed request, used again: %+v", r)
		}
	}

	// Replay before the limit before the conflict; a rate-limited request keeps nothing.
	lim := contract.RateLimit{Rate: 1, Burst: 1}
	f.code("D", contract.CodeRecord{})
	f.code("E", contract.CodeRecord{})
	d := f.call(contract.ActionVerify, "D")
	d.ReplayKey, d.IdempotencyKey, d.RequestHash, d.Limit = "n:"+contract.NewID(), "order-D", "hD", lim
	f.apply(d)
	e := f.call(contract.ActionVerify, "E")
	e.ReplayKey, e.IdempotencyKey, e.RequestHash, e.Limit = "n:"+contract.NewID(), "order-D", "hE", lim
	if _, err := f.c.Apply(ctx, e); !errors.Is(err, contract.ErrRateLimited) {
		t.Fatalf("over the limit with a conflicting key: %v, want ErrRateLimited first", err)
	}
	replay := d
	replay.Code, replay.RequestHash = "E", "hE"
	if _, err := f.c.Apply(ctx, replay); !errors.Is(err, contract.ErrReplayed) {
		t.Fatalf("replayed nonce over the limit: %v, want ErrReplayed first", err)
	}
	e.Now = e.Now.Add(time.Second)
	if _, err := f.c.Apply(ctx, e); !errors.Is(err, contract.ErrIdempotencyConflict) {
		t.Fatalf("the rate-limited request sent again after a refill: %v, want ErrIdempotencyConflict", err)
	}
	// The conflict gave its token and its nonce back: with its own key, the same request runs.
	e.IdempotencyKey = "order-E"
	if r := f.apply(e); !r.Outcome.Success() {
		t.Fatalf("the request with its own key: %+v", r)
	}
}
