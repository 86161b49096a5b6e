package cache

import (
	"context"
	"errors"
	"fmt"
	"strconv"
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

// Apply runs one verify or reactivate as one script call: replay check, token bucket,
// Idempotency-Key, the contract's checks, the transition and the log event, atomically. When
// the script finds the code or the project missing from Redis, it changed nothing; Apply then
// loads the entry through the Loader (loads never overwrite what Redis holds, so racing loads
// are harmless) and calls again. Refusals are contract.ErrReplayed, contract.ErrRateLimited
// and contract.ErrIdempotencyConflict; a business outcome (used, disabled, …) is no error.
func (c *Cache) Apply(ctx context.Context, op contract.Operation) (contract.OperationResult, error) {
	if err := checkOperation(op); err != nil {
		return contract.OperationResult{}, err
	}
	for attempt := 0; attempt < maxLoads; attempt++ {
		r, err := c.applyOnce(ctx, op)
		if err != nil {
			return contract.OperationResult{}, err
		}
		switch r.status {
		case statusCodeMiss:
			err = c.loadCode(ctx, op.ProjectID, op.Code)
		case statusProjectMiss:
			err = c.loadProject(ctx, op.ProjectID)
		default:
			return r.result(op)
		}
		if err != nil {
			return contract.OperationResult{}, err
		}
	}
	return contract.OperationResult{}, errors.New("code state did not settle in redis after loading")
}

// checkOperation refuses what apply.lua would misread: it treats every action but verify as a
// reactivation, and writes the action and both ids into the event JSON without escaping.
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
	return nil
}

func (c *Cache) applyOnce(ctx context.Context, op contract.Operation) (applyReply, error) {
	idem := "0"
	if op.IdempotencyKey != "" {
		idem = "1"
	}
	keys := []string{
		codeKey(op.ProjectID, op.Code),
		projectKey(op.ProjectID),
		outboxKey(shardOf(op.ProjectID)),
		bucketKey(op.ProjectID, op.KeyID),
		replayKey(op.ProjectID, op.KeyID, op.ReplayKey),
		idemKey(op.ProjectID, op.KeyID, op.IdempotencyKey),
	}
	v, err := c.eval(ctx, applyScript, keys,
		string(op.Action), op.Now.UnixMilli(), op.EventID, op.ProjectID, op.By, op.Reason, op.IP,
		int64(ReplayTTL/time.Second), idem, op.RequestHash, int64(IdempotencyTTL/time.Second),
		strconv.FormatFloat(op.Limit.Rate, 'f', -1, 64), op.Limit.Burst, op.TraceParent,
	)
	if err != nil {
		return applyReply{}, fmt.Errorf("run apply script: %w", err)
	}
	return decodeApply(v)
}

// result turns the script's reply into the domain's answer.
func (r applyReply) result(op contract.Operation) (contract.OperationResult, error) {
	res := contract.OperationResult{Rate: contract.RateState{
		Remaining: int(r.rlRemaining), Wait: time.Duration(r.rlWaitMs) * time.Millisecond,
	}}
	switch r.status {
	case statusOK, statusIdemReplayed:
		res.Replayed = r.status == statusIdemReplayed
		res.Outcome = contract.Outcome{Action: op.Action, Code: op.Code, Error: contract.ErrorCode(r.errorCode),
			CodeID: r.codeID, VerifiedAt: r.verifiedAtMs, At: r.atMs}
		return res, nil
	case statusReplayed:
		return res, contract.ErrReplayed
	case statusRateLimited:
		return res, contract.ErrRateLimited
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

// loadProject copies a project's state from the Loader into Redis.
func (c *Cache) loadProject(ctx context.Context, projectID string) error {
	if c.loader == nil {
		return errors.New("project not in redis and no loader configured")
	}
	p, err := c.loader.Project(ctx, projectID)
	if err != nil {
		return fmt.Errorf("load project: %w", err)
	}
	return c.LoadProject(ctx, p)
}

// Admit applies the replay check and the token bucket of a request outside verify and
// reactivate in one round trip. Refusals are contract.ErrReplayed and contract.ErrRateLimited.
func (c *Cache) Admit(ctx context.Context, a contract.Admission) (contract.RateState, error) {
	check := "0"
	if a.CheckReplay {
		check = "1"
	}
	keys := []string{bucketKey(a.ProjectID, a.KeyID), replayKey(a.ProjectID, a.KeyID, a.ReplayKey)}
	v, err := c.eval(ctx, admitScript, keys, a.Now.UnixMilli(), check, int64(ReplayTTL/time.Second),
		strconv.FormatFloat(a.Limit.Rate, 'f', -1, 64), a.Limit.Burst)
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
