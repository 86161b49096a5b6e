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
//  1. The pre-call (precall.go): one round trip that spends the request's replay marker and,
//     with an Idempotency-Key, claims the key in its own slot.
//  2. For a rate-limited key, a token: from this replica's lease (lease.go), without Redis
//     unless the lease is empty, or, for a key too slow to lease, from the bucket (admit.lua).
//  3. A claim holding another request's hash: 409.
//  4. One script call in the code's shard (apply.lua) runs the stored outcome of a retried
//     Idempotency-Key, the contract's checks, the transition and the log event, atomically.
//     When the script finds the code or the shard's copy of the project missing from Redis, it
//     changed nothing; Apply then loads the entry through the Loader (loads never overwrite
//     newer state, so racing loads are harmless) and calls again.
//
// Refusals are contract.ErrReplayed, contract.ErrRateLimited and
// contract.ErrIdempotencyConflict; a business outcome (used, disabled, …) is no error. A
// request refused, or that fails, gets its token back: only a request the script answered
// costs a token. A refused request also gets its replay marker and a claim it made back
// (release), so it can be sent again unchanged; one that failed keeps them unless it surely
// changed nothing.
func (c *Cache) Apply(ctx context.Context, op contract.Operation) (contract.OperationResult, error) {
	if err := checkOperation(op); err != nil {
		return contract.OperationResult{}, err
	}
	unlimited := contract.RateState{Remaining: -1}
	pre, err := c.spendReplay(ctx, op.KeyID, op.ReplayKey, &op)
	if err != nil {
		return contract.OperationResult{}, err
	}
	if pre.replayed {
		c.release(ctx, op.KeyID, op.ReplayKey, &op, pre)
		return contract.OperationResult{Rate: unlimited}, contract.ErrReplayed
	}
	rate := unlimited
	limited, leased := op.Limit.Rate > 0, false
	if limited {
		rs, l, err := c.takeToken(ctx, op.KeyID, op.Limit, op.Now)
		if err != nil {
			c.release(ctx, op.KeyID, op.ReplayKey, &op, pre)
			return contract.OperationResult{Rate: rs}, err
		}
		rate, leased = rs, l
	}
	if pre.claim == claimConflict {
		if limited {
			c.returnToken(ctx, op.KeyID, op.Limit, leased)
		}
		c.release(ctx, op.KeyID, op.ReplayKey, &op, pre)
		return contract.OperationResult{Rate: rate}, contract.ErrIdempotencyConflict
	}
	res, unchanged, err := c.applyLoading(ctx, ShardOf(op.ProjectID, op.Code), op)
	res.Rate = rate
	if err != nil {
		if limited {
			c.returnToken(ctx, op.KeyID, op.Limit, leased)
		}
		if unchanged {
			c.release(ctx, op.KeyID, op.ReplayKey, &op, pre)
		}
	}
	return res, err
}

// applyLoading runs apply.lua, loading what it misses, until it answers. unchanged is true
// when the call surely changed nothing: a refusal, or a failure to load what the script missed
// (a script call that failed may have run).
func (c *Cache) applyLoading(ctx context.Context, shard int, op contract.Operation) (res contract.OperationResult, unchanged bool, err error) {
	for attempt := 0; attempt < maxLoads; attempt++ {
		r, err := c.applyOnce(ctx, shard, op)
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

// applyOnce sends apply.lua once: the code's, project copy's and outbox's keys, and the
// idempotency record's when the request has a key; one argument, the event's head, and the
// request hash with a key.
func (c *Cache) applyOnce(ctx context.Context, shard int, op contract.Operation) (applyReply, error) {
	keys := make([]string, 3, 4)
	keys[0] = codeKeyIn(shard, op.ProjectID, op.Code)
	keys[1] = projectKey(shard, op.ProjectID)
	keys[2] = outboxKey(shard)
	head, err := contract.AppendEventHead(make([]byte, 0, contract.EventHeadSize(op)), op)
	if err != nil {
		return applyReply{}, fmt.Errorf("apply: %w", err)
	}
	args := []interface{}{head}
	if op.IdempotencyKey != "" {
		keys = append(keys, idemKey(shard, op.KeyID, op.IdempotencyKey))
		args = append(args, op.RequestHash)
	}
	v, err := c.call(ctx, applyScript, keys, args...)
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
// reactivate: the replay marker first (spendReplay, the one check every request goes through),
// then a token from the lease or the bucket. Refusals are contract.ErrReplayed and
// contract.ErrRateLimited; a request refused for the rate gets its marker back, so it can be
// sent again unchanged.
func (c *Cache) Admit(ctx context.Context, a contract.Admission) (contract.RateState, error) {
	unlimited := contract.RateState{Remaining: -1}
	var pre precall
	if a.CheckReplay {
		p, err := c.spendReplay(ctx, a.KeyID, a.ReplayKey, nil)
		if err != nil {
			return contract.RateState{}, err
		}
		if p.replayed {
			return unlimited, contract.ErrReplayed
		}
		pre = p
	}
	if a.Limit.Rate <= 0 {
		return unlimited, nil
	}
	rs, _, err := c.takeToken(ctx, a.KeyID, a.Limit, a.Now)
	if err != nil {
		c.release(ctx, a.KeyID, a.ReplayKey, nil, pre)
	}
	return rs, err
}

// admit takes one token from a key's bucket with admit.lua.
func (c *Cache) admit(ctx context.Context, keyID string, limit contract.RateLimit, now time.Time) (contract.RateState, error) {
	v, err := c.call(ctx, admitScript, []string{bucketKey(keyID)}, now.UnixMilli(),
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
	case statusRateLimited:
		return rs, contract.ErrRateLimited
	}
	return rs, fmt.Errorf("admit script replied unknown status %d", r.status)
}
