package cache

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/localenv"
)

// projectLoader is a Loader that knows one project.
type projectLoader struct {
	p     contract.Project
	loads int
}

func (l *projectLoader) CodeByValue(context.Context, string, string) (contract.CodeRecord, error) {
	return contract.CodeRecord{}, contract.ErrNotFound
}

func (l *projectLoader) ProjectState(context.Context, string) (contract.Project, int64, error) {
	l.loads++
	return l.p, 1, nil
}

func (l *projectLoader) APIKey(context.Context, string) (contract.APIKey, error) {
	return contract.APIKey{}, contract.ErrNotFound
}

// What Redis holds from before the lean script is read as it was written: an idempotency
// record of the previous format (a hash) still answers a retry with its stored outcome, and a
// project copy without the one-field state is loaded again, not misread.
func TestRecordsOfThePreviousFormat(t *testing.T) {
	r, err := localenv.StartRedis(t.TempDir(), localenv.RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Stop(5 * time.Second) })
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	pid := contract.NewID()
	loader := &projectLoader{p: contract.Project{ID: pid, Status: true}}
	c := New(rdb, WithLoader(loader))
	codeID := contract.NewID()
	if _, err := c.PutCode(ctx, pid, contract.CodeRecord{ID: codeID, ProjectID: pid, Code: "OLD"}); err != nil {
		t.Fatal(err)
	}
	shard := ShardOf(pid, "OLD")
	// A project copy as the previous putproject.lua wrote it: enabled, without F_PSTATE.
	if err := rdb.HSet(ctx, projectKey(shard, pid), fEnabled, "1", fVersion, "1").Err(); err != nil {
		t.Fatal(err)
	}
	// A first request's record as the previous apply.lua stored it.
	const stored = "CODE_ALREADY_USED|0123456789abcdef0123456789abcdef|1750000000123|1790000000001"
	if err := rdb.HSet(ctx, idemKey(shard, "k1", "order-1"), fRequestHash, "h1", fStoredReply, stored).Err(); err != nil {
		t.Fatal(err)
	}
	op := contract.Operation{Action: contract.ActionVerify, ProjectID: pid, KeyID: "k1", Code: "OLD", IP: "127.0.0.1",
		ReplayKey: contract.NewID(), EventID: contract.NewID(), Now: time.Unix(1_800_000_000, 0),
		IdempotencyKey: "order-1", RequestHash: "h1"}
	res, _, err := c.applyLoading(ctx, shard, op, int64(ReplayTTL/time.Second))
	if err != nil {
		t.Fatal(err)
	}
	want := contract.Outcome{Action: contract.ActionVerify, Code: "OLD", Error: contract.CodeAlreadyUsed,
		CodeID: "0123456789abcdef0123456789abcdef", VerifiedAt: 1_750_000_000_123, At: 1_790_000_000_001}
	if !res.Replayed || res.Outcome != want {
		t.Fatalf("retry under a record of the previous format: %+v, want the stored %+v", res, want)
	}
	if loader.loads != 1 {
		t.Fatalf("the project copy without its one-field state was loaded %d times, want 1", loader.loads)
	}
	// Another request with the key is refused; the record stays the previous format's.
	op.RequestHash, op.ReplayKey = "h2", contract.NewID()
	if _, _, err := c.applyLoading(ctx, shard, op, int64(ReplayTTL/time.Second)); !errors.Is(err, contract.ErrIdempotencyConflict) {
		t.Fatalf("another request under the old record: %v, want ErrIdempotencyConflict", err)
	}
	// The code itself was never touched: a verify without the key redeems it.
	op.IdempotencyKey, op.RequestHash, op.ReplayKey = "", "", contract.NewID()
	res, _, err = c.applyLoading(ctx, shard, op, int64(ReplayTTL/time.Second))
	if err != nil || !res.Outcome.Success() || res.Outcome.CodeID != codeID {
		t.Fatalf("verify: %+v, %v", res, err)
	}
}
