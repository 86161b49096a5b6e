package cache

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/redis/go-redis/v9"
)

// An Idempotency-Key is claimed in a slot of its own before the request reaches its code's
// shard. The code's shard holds the stored outcome, written atomically with the transition,
// but a key reused with a request naming another code reaches another shard and would not find
// it. The claim, `SET acv:ik:{<key id>:<idempotency key>} <request hash> NX GET`, is in a slot
// derived from the idempotency key itself, so claims spread over the cluster like codes do:
// nil is a first use, the same hash a retry (it goes on to the code's shard, which answers the
// stored outcome), another hash a 409 before anything changed. A request that also sends
// X-Nonce has its replay marker set in the same round trip (a pipeline of two single-slot
// commands), in a slot of the nonce's own, so a nonce reused with another code is caught too.

// claimState is what the claim of an Idempotency-Key found.
type claimState int

const (
	claimNone     claimState = iota // no Idempotency-Key sent: no claim made
	claimFresh                      // first use: this request holds the claim
	claimRetry                      // the claim holds this request's hash: a retry
	claimConflict                   // the claim holds another request's hash
)

// precall is the outcome of the pre-call: the claim, and whether it set the nonce's marker.
type precall struct {
	claim    claimState
	nonceSet bool // this request set its nonce's marker in its own slot
	replayed bool // the nonce's marker was there: the request is a replay
}

// claimKey names an Idempotency-Key's claim. The hash tag holds the key id and the
// idempotency key, so each claim lands in a slot of its own.
func claimKey(keyID, idem string) string { return "acv:ik:{" + keyID + ":" + idem + "}" }

// nonceReplayKey names the replay marker of a verify or reactivate that sends both X-Nonce and
// an Idempotency-Key, in the nonce's own slot.
func nonceReplayKey(keyID, nonce string) string { return "acv:rp:{" + keyID + ":" + nonce + "}" }

// nonceOf is the nonce of a replay identity (contract.ReplayIdentity), "" when the identity
// is a signature.
func nonceOf(replayKey string) string {
	n, _ := strings.CutPrefix(replayKey, "n:")
	if n == replayKey {
		return ""
	}
	return n
}

// claim runs the pre-call of a request with an Idempotency-Key: one round trip.
func (c *Cache) claim(ctx context.Context, op contract.Operation) (precall, error) {
	pipe := c.rdb.Pipeline()
	nonce := nonceOf(op.ReplayKey)
	var marker *redis.BoolCmd
	if nonce != "" {
		marker = pipe.SetNX(ctx, nonceReplayKey(op.KeyID, nonce), "1", ReplayTTL)
	}
	cl := pipe.SetArgs(ctx, claimKey(op.KeyID, op.IdempotencyKey), op.RequestHash,
		redis.SetArgs{Mode: "NX", Get: true, TTL: IdempotencyTTL})
	_, err := pipe.Exec(ctx)
	if err != nil && !errors.Is(err, redis.Nil) {
		return precall{}, fmt.Errorf("claim idempotency key: %w", translate(err))
	}
	var p precall
	if marker != nil {
		p.nonceSet = marker.Val()
		p.replayed = !p.nonceSet
	}
	switch prev, err := cl.Result(); {
	case errors.Is(err, redis.Nil):
		p.claim = claimFresh
	case err != nil:
		return precall{}, fmt.Errorf("claim idempotency key: %w", translate(err))
	case prev == op.RequestHash:
		p.claim = claimRetry
	default:
		p.claim = claimConflict
	}
	return p, nil
}

// release undoes what the pre-call wrote for a request that did not run: the nonce's marker
// (the request can be sent again with its nonce) and the claim when this request made it. On
// its own deadline, as a refund: the caller's may be what ended the request. A release that
// fails leaves a marker (the nonce is spent) or a claim (a different request with the key is
// 409) until they expire: stricter than needed, never looser.
func (c *Cache) release(ctx context.Context, op contract.Operation, p precall) {
	if !p.nonceSet && p.claim != claimFresh {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseCallTimeout)
	defer cancel()
	pipe := c.rdb.Pipeline()
	if p.nonceSet {
		pipe.Del(ctx, nonceReplayKey(op.KeyID, nonceOf(op.ReplayKey)))
	}
	if p.claim == claimFresh {
		releaseScript.Eval(ctx, pipe, []string{claimKey(op.KeyID, op.IdempotencyKey)}, op.RequestHash)
	}
	_, _ = pipe.Exec(ctx)
}

// shardReplayTTL is apply.lua's ARGV[8]: the replay marker's TTL in the code's shard, or 0
// when the pre-call already set the request's marker in the nonce's own slot.
func shardReplayTTL(p precall) int64 {
	if p.nonceSet {
		return 0
	}
	return int64(ReplayTTL / time.Second)
}
