package cache

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/redis/go-redis/v9"
)

// The verify script of the previous format, as the hot path sent it (EVALSHA, twelve
// arguments, the event's JSON built in Lua, a table reply), kept only for MeasureVerifyCPU's
// "before" figure (ApplyV1): Verify never sends it.

var (
	//go:embed testdata/apply_v1.lua
	applyV1Src    string
	applyV1Script = redis.NewScript(luaPrelude() + "local F_EVENT = '" + eventField + "'\nlocal F_TRACEPARENT = '" +
		contract.HeaderFieldPrefix + "traceparent'\nlocal F_REQ_HASH = 'h'\nlocal F_REPLY = 'r'\nlocal S_REPLAYED = 4\n" + applyV1Src)
)

// applyOnceV1 is applyOnce as it was, with the script of the previous format.
func (c *Cache) applyOnceV1(ctx context.Context, shard int, op contract.Operation) (applyReply, error) {
	idem := "0"
	if op.IdempotencyKey != "" {
		idem = "1"
	}
	keys := []string{
		codeKeyIn(shard, op.ProjectID, op.Code),
		projectKey(shard, op.ProjectID),
		legacyOutboxKey(shard),
		ShardPrefix(shard) + "rp:" + op.KeyID + ":" + op.ReplayKey,
		idemKey(shard, op.KeyID, op.IdempotencyKey),
	}
	v, err := c.eval(ctx, applyV1Script, keys,
		string(op.Action), op.Now.UnixMilli(), op.EventID, op.ProjectID, op.By, op.Reason, op.IP,
		int64(ReplayTTL/time.Second), idem, op.RequestHash, int64(IdempotencyTTL/time.Second),
		op.TraceParent,
	)
	if err != nil {
		return applyReply{}, fmt.Errorf("run apply script (previous format): %w", err)
	}
	r, err := newReply("apply_v1.lua", v, 5)
	if err != nil {
		return applyReply{}, err
	}
	a := applyReply{status: status(r.int(0)), errorCode: r.str(1), codeID: r.str(2),
		verifiedAtMs: r.int(3), atMs: r.int(4)}
	return a, r.err
}
