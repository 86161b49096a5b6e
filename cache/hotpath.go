package cache

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/acv/acv/api/contract"
)

// TTLs of the hot path's records.
const (
	// ReplayTTL outlives the signature window on both sides, so a request is refused as a
	// replay for as long as its timestamp would be accepted.
	ReplayTTL      = 2*contract.SignatureWindow*time.Second + 60*time.Second
	IdempotencyTTL = 24 * time.Hour
)

// maxLoads bounds the loads one operation may trigger: the code, the project, and one more
// of each if an admin change removed an entry in between.
const maxLoads = 4

// Verify redeems a code: unused → used. See Apply.
func (c *Cache) Verify(ctx context.Context, op contract.Operation) (contract.OperationResult, error) {
	op.Action = contract.ActionVerify
	return c.Apply(ctx, op)
}

// Reactivate returns a used code to unused. See Apply.
func (c *Cache) Reactivate(ctx context.Context, op contract.Operation) (contract.OperationResult, error) {
	op.Action = contract.ActionReactivate
	return c.Apply(ctx, op)
}

// Apply runs one verify or reactivate, in this order (the contract's: a replay is 401 before a
// 429, a 429 before a 409):
//
//  1. With an Idempotency-Key, the pre-call (claim.go): one round trip that claims the key in
//     its own slot and, with X-Nonce, sets the nonce's replay marker in its own slot.
//  2. For a rate-limited key, a token: from this replica's lease (lease.go), without Redis
//     unless the lease is empty, or, for a key too slow to lease, from the bucket (admit.lua).
//  3. A claim holding another request's hash: 409.
//  4. One script call in the code's shard (apply.lua) runs the replay check (unless step 1
//     did), the stored outcome of a retried Idempotency-Key, the contract's checks, the
//     transition and the log event, atomically. When the script finds the code or the shard's
//     copy of the project missing from Redis, it changed nothing; Apply then loads the entry
//     through the Loader (loads never overwrite newer state, so racing loads are harmless) and
//     calls again.
//
// Refusals are contract.ErrReplayed, contract.ErrRateLimited and
// contract.ErrIdempotencyConflict; a business outcome (used, disabled, …) is no error. A
// request refused, or that fails, gets its token back: only a request the script answered
// costs a token. A refused request also gets its nonce and a claim it made back (release), so
// it can be sent again unchanged; one that failed keeps them unless it surely changed nothing.
func (c *Cache) Apply(ctx context.Context, op contract.Operation) (contract.OperationResult, error) {
	if err := checkOperation(op); err != nil {
		return contract.OperationResult{}, err
	}
	shard := ShardOf(op.ProjectID, op.Code)
	unlimited := contract.RateState{Remaining: -1}
	var pre precall
	if op.IdempotencyKey != "" {
		p, err := c.claim(ctx, op)
		if err != nil {
			return contract.OperationResult{}, err
		}
		pre = p
		if pre.replayed {
			c.release(ctx, op, pre)
			return contract.OperationResult{Rate: unlimited}, contract.ErrReplayed
		}
	}
	rate := unlimited
	limited, leased := op.Limit.Rate > 0, false
	if limited {
		rs, l, err := c.takeToken(ctx, op.KeyID, op.Limit, op.Now)
		if err != nil {
			// A replay is told it is one even when the bucket is empty: 401 before 429.
			if errors.Is(err, contract.ErrRateLimited) && c.shardReplayed(ctx, shard, op, pre) {
				err, rs = contract.ErrReplayed, unlimited
			}
			c.release(ctx, op, pre)
			return contract.OperationResult{Rate: rs}, err
		}
		rate, leased = rs, l
	}
	if pre.claim == claimConflict {
		err := contract.ErrIdempotencyConflict
		res := contract.OperationResult{Rate: rate}
		if c.shardReplayed(ctx, shard, op, pre) {
			err, res.Rate = contract.ErrReplayed, unlimited
		}
		if limited {
			c.returnToken(ctx, op.KeyID, op.Limit, leased)
		}
		c.release(ctx, op, pre)
		return res, err
	}
	res, unchanged, err := c.applyLoading(ctx, shard, op, shardReplayTTL(pre))
	res.Rate = rate
	if errors.Is(err, contract.ErrReplayed) {
		// The replay check runs before the bucket: the refusal says so with Remaining -1.
		res.Rate = unlimited
	}
	if err != nil {
		if limited {
			c.returnToken(ctx, op.KeyID, op.Limit, leased)
		}
		if unchanged {
			c.release(ctx, op, pre)
		}
	}
	return res, err
}

// shardReplayed tells, on a refusal's path only, whether a request whose replay marker lives
// in its code's shard was seen before: one EXISTS. A request whose marker the pre-call set
// was checked there.
func (c *Cache) shardReplayed(ctx context.Context, shard int, op contract.Operation, pre precall) bool {
	if pre.nonceSet {
		return false
	}
	n, err := c.rdb.Exists(ctx, replayKey(shard, op.KeyID, op.ReplayKey)).Result()
	return err == nil && n == 1
}

// applyLoading runs apply.lua, loading what it misses, until it answers. unchanged is true
// when the call surely changed nothing: a refusal, or a failure to load what the script missed
// (a script call that failed may have run).
func (c *Cache) applyLoading(ctx context.Context, shard int, op contract.Operation, replayTTL int64) (res contract.OperationResult, unchanged bool, err error) {
	for attempt := 0; attempt < maxLoads; attempt++ {
		r, err := c.applyOnce(ctx, shard, op, replayTTL)
		if err != nil {
			return contract.OperationResult{}, false, err
		}
		switch r.status {
		case statusCodeMiss:
			err = c.loadCode(ctx, op.ProjectID, op.Code)
		case statusProjectMiss:
			err = c.loadProject(ctx, shard, op.ProjectID)
		default:
			res, err := r.result(op)
			return res, err != nil, err
		}
		if err != nil {
			return contract.OperationResult{}, true, err
		}
	}
	return contract.OperationResult{}, true, errors.New("code state did not settle in redis after loading")
}

// checkOperation refuses, before any Redis call, what the event's head cannot carry (an action
// but verify and reactivate, ids that are not 32 hex characters: contract.AppendEventHead) and
// a request hash with a space, which ends it in the idempotency record apply.lua writes.
func checkOperation(op contract.Operation) error {
	if op.Action != contract.ActionVerify && op.Action != contract.ActionReactivate {
		return fmt.Errorf("apply: action %q is neither %s nor %s", op.Action, contract.ActionVerify, contract.ActionReactivate)
	}
	if !contract.ValidID(op.ProjectID) {
		return fmt.Errorf("apply: project id %q is not an id", op.ProjectID)
	}
	if !contract.ValidID(op.EventID) {
		return fmt.Errorf("apply: event id %q is not an id", op.EventID)
	}
	if strings.Contains(op.RequestHash, " ") {
		return fmt.Errorf("apply: request hash %q holds a space", op.RequestHash)
	}
	return nil
}

// applyOnce sends apply.lua once (FCALL): the code's, project copy's and outbox's keys, the
// replay marker's when replayTTL asks for the check here, the idempotency record's when the
// request has a key; one argument, the event's head, and the request hash with a key.
func (c *Cache) applyOnce(ctx context.Context, shard int, op contract.Operation, replayTTL int64) (applyReply, error) {
	if c.applyCall == ApplyV1 {
		return c.applyOnceV1(ctx, shard, op, replayTTL)
	}
	keys := make([]string, 3, 5)
	keys[0] = codeKeyIn(shard, op.ProjectID, op.Code)
	keys[1] = projectKey(shard, op.ProjectID)
	keys[2] = outboxKey(shard)
	if replayTTL > 0 {
		keys = append(keys, replayKey(shard, op.KeyID, op.ReplayKey))
	}
	head, err := contract.AppendEventHead(make([]byte, 0, contract.EventHeadSize(op)), op)
	if err != nil {
		return applyReply{}, fmt.Errorf("apply: %w", err)
	}
	args := []interface{}{head}
	if op.IdempotencyKey != "" {
		keys = append(keys, idemKey(shard, op.KeyID, op.IdempotencyKey))
		args = append(args, op.RequestHash)
	}
	var s script = applyFn
	if c.applyCall == ApplyEvalSha {
		s = applyScript
	}
	v, err := c.eval(ctx, s, keys, args...)
	if err != nil {
		return applyReply{}, fmt.Errorf("run apply script: %w", err)
	}
	return decodeApply(v, op)
}

// result turns the script's reply into the domain's answer.
func (r applyReply) result(op contract.Operation) (contract.OperationResult, error) {
	var res contract.OperationResult
	switch r.status {
	case statusOK, statusIdemReplayed:
		res.Replayed = r.status == statusIdemReplayed
		res.Outcome = contract.Outcome{Action: op.Action, Code: op.Code, Error: contract.ErrorCode(r.errorCode),
			CodeID: r.codeID, VerifiedAt: r.verifiedAtMs, At: r.atMs}
		return res, nil
	case statusReplayed:
		return res, contract.ErrReplayed
	case statusIdemConflict:
		return res, contract.ErrIdempotencyConflict
	}
	return res, fmt.Errorf("apply script replied unknown status %d", r.status)
}

// loadCode copies a code from the Loader into Redis, or remembers that the value is unknown.
func (c *Cache) loadCode(ctx context.Context, projectID, value string) error {
	if c.loader == nil {
		return errors.New("code not in redis and no loader configured")
	}
	rec, err := c.loader.CodeByValue(ctx, projectID, value)
	if errors.Is(err, contract.ErrNotFound) {
		return c.MarkUnknown(ctx, projectID, value, c.unknownTTL)
	}
	if err != nil {
		return fmt.Errorf("load code: %w", err)
	}
	_, err = c.PutCode(ctx, projectID, rec)
	return err
}

// Admit applies the replay check and the token bucket of a request outside verify and
// reactivate in one round trip, in the API key's own slot. Refusals are contract.ErrReplayed
// and contract.ErrRateLimited.
func (c *Cache) Admit(ctx context.Context, a contract.Admission) (contract.RateState, error) {
	if a.Limit.Rate > 0 && leaseMax(a.Limit) >= minLease {
		return c.admitLeased(ctx, a)
	}
	return c.admit(ctx, bucketKey(a.KeyID), keyReplayKey(a.KeyID, a.ReplayKey), a.CheckReplay, a.Limit, a.Now)
}

// admitLeased admits a request of a key whose tokens are leased: the token from the lease,
// the replay check (when asked) with admit.lua in the key's slot, only after a token was found
// (a replay still 401 before 429: an empty lease looks for the marker).
func (c *Cache) admitLeased(ctx context.Context, a contract.Admission) (contract.RateState, error) {
	replay := keyReplayKey(a.KeyID, a.ReplayKey)
	rs, err := c.limits.take(ctx, a.KeyID, a.Limit, a.Now)
	if errors.Is(err, contract.ErrRateLimited) && a.CheckReplay {
		if n, xerr := c.rdb.Exists(ctx, replay).Result(); xerr == nil && n == 1 {
			return contract.RateState{Remaining: -1}, contract.ErrReplayed
		}
	}
	if err != nil || !a.CheckReplay {
		return rs, err
	}
	if prs, err := c.admit(ctx, bucketKey(a.KeyID), replay, true, contract.RateLimit{}, a.Now); err != nil {
		c.limits.giveBack(a.KeyID)
		return prs, err
	}
	return rs, nil
}

// admit runs admit.lua on a key's bucket and, when checkReplay, a replay marker.
func (c *Cache) admit(ctx context.Context, bucket, replay string, checkReplay bool, limit contract.RateLimit, now time.Time) (contract.RateState, error) {
	check := "0"
	if checkReplay {
		check = "1"
	}
	v, err := c.eval(ctx, admitScript, []string{bucket, replay}, now.UnixMilli(), check, int64(ReplayTTL/time.Second),
		strconv.FormatFloat(limit.Rate, 'f', -1, 64), limit.Burst)
	if err != nil {
		return contract.RateState{}, fmt.Errorf("run admit script: %w", err)
	}
	r, err := decodeAdmit(v)
	if err != nil {
		return contract.RateState{}, err
	}
	rs := contract.RateState{Remaining: int(r.rlRemaining), Wait: time.Duration(r.rlWaitMs) * time.Millisecond}
	switch r.status {
	case statusOK:
		return rs, nil
	case statusReplayed:
		return rs, contract.ErrReplayed
	case statusRateLimited:
		return rs, contract.ErrRateLimited
	}
	return rs, fmt.Errorf("admit script replied unknown status %d", r.status)
}
