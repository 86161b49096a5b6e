package cache

import (
	"context"
	"errors"
	"fmt"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/redisscript"
	"github.com/redis/go-redis/v9"
)

// Every request the contract replay-checks has one replay marker, named by its replay identity
// alone: `acv:rp:{<key id>:<replay key>}` (replayMarkerKey), where the replay key is the nonce
// or, without one, the signature (contract.ReplayIdentity). It is checked and set by one
// command, SET NX, in spendReplay's pipeline and nowhere else: verify, reactivate, a read with
// X-Nonce and a request refused for the wrong project all spend the same marker. Nothing the
// client can vary without breaking the signature (no unsigned header, no Idempotency-Key, no
// header spelling) picks another marker, so a captured request is accepted once, in whatever
// form it is sent again. The marker sits in a slot of its own, so markers spread over a
// cluster's masters like codes do, and a nonce reused with another code, in any shard, or with
// another method, is caught too.
//
// An Idempotency-Key is claimed in the same round trip, in a slot derived from the key itself:
// `SET acv:ik:{<key id>:<idempotency key>} <request hash> NX GET`. The code's shard holds the
// stored outcome, written atomically with the transition, but a key reused with a request
// naming another code reaches another shard and would not find it: the claim catches that.
// nil is a first use, the same hash a retry (it goes on to the code's shard, which answers the
// stored outcome), another hash a 409 before anything changed.

// claimState is what the claim of an Idempotency-Key found.
type claimState int

const (
	claimNone     claimState = iota // no Idempotency-Key sent: no claim made
	claimFresh                      // first use: this request holds the claim
	claimRetry                      // the claim holds this request's hash: a retry
	claimConflict                   // the claim holds another request's hash
)

// precall is what the pre-call of a verify or reactivate found and wrote.
type precall struct {
	claim    claimState
	marked   bool // this request set its replay marker
	replayed bool // the marker was there: the request is a replay
}

// replayMarkerKey names the replay marker of (key id, replay key), in a slot of its own.
func replayMarkerKey(keyID, replay string) string { return "acv:rp:{" + keyID + ":" + replay + "}" }

// claimKey names an Idempotency-Key's claim. The hash tag holds the key id and the
// idempotency key, so each claim lands in a slot of its own.
func claimKey(keyID, idem string) string { return "acv:ik:{" + keyID + ":" + idem + "}" }

// spendReplay sets the replay marker of (keyID, replay) and, when op has an Idempotency-Key,
// claims it, in one round trip. A marker already there makes the request a replay; the claim
// is then given back (nothing ran).
func (c *Cache) spendReplay(ctx context.Context, keyID, replay string, op *contract.Operation) (precall, error) {
	if replay == "" {
		return precall{}, errors.New("replay check: the request has no replay identity")
	}
	pipe := c.rdb.Pipeline()
	marker := pipe.SetNX(ctx, replayMarkerKey(keyID, replay), "1", ReplayTTL)
	var cl *redis.StatusCmd
	if op != nil && op.IdempotencyKey != "" {
		cl = pipe.SetArgs(ctx, claimKey(op.KeyID, op.IdempotencyKey), op.RequestHash,
			redis.SetArgs{Mode: "NX", Get: true, TTL: IdempotencyTTL})
	}
	_, err := pipe.Exec(ctx)
	if err != nil && !errors.Is(err, redis.Nil) {
		return precall{}, fmt.Errorf("replay check: %w", translate(err))
	}
	p := precall{marked: marker.Val()}
	p.replayed = !p.marked
	if cl != nil {
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
	}
	return p, nil
}

// release undoes what the pre-call wrote for a request that did not run: its replay marker
// (the request can be sent again unchanged) and the claim when this request made it. Only what
// this request set is removed: a marker it found there belongs to the request accepted before.
// On its own deadline, as a refund: the caller's may be what ended the request. A release that
// fails leaves a marker (the request is spent) or a claim (a different request with the key is
// 409) until they expire: stricter than needed, never looser.
func (c *Cache) release(ctx context.Context, keyID, replay string, op *contract.Operation, p precall) {
	if !p.marked && p.claim != claimFresh {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseCallTimeout)
	defer cancel()
	if p.claim != claimFresh {
		_ = c.rdb.Del(ctx, replayMarkerKey(keyID, replay)).Err()
		return
	}
	// The claim's release, and the marker's DEL in the same round trip.
	var delMarker redisscript.Tail
	if p.marked {
		delMarker = func(ctx context.Context, pipe redis.Pipeliner) func() error {
			pipe.Del(ctx, replayMarkerKey(keyID, replay))
			return nil
		}
	}
	call := &redisscript.Call{Script: releaseScript, Keys: []string{claimKey(op.KeyID, op.IdempotencyKey)}, Args: []interface{}{op.RequestHash}}
	redisscript.Send(ctx, c.rdb, []*redisscript.Call{call}, delMarker)
}
