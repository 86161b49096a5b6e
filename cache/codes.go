package cache

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/redisscript"
)

// PutCode stores a code unless Redis already holds a state for it (Redis is always the newer
// one). It reports whether it stored.
func (c *Cache) PutCode(ctx context.Context, projectID string, r contract.CodeRecord) (bool, error) {
	if err := checkCodeIDs(r); err != nil {
		return false, err
	}
	return c.runDone(ctx, "put code", putCodeScript, []string{codeKey(projectID, r.Code)}, putCodeArgs(r)...)
}

// PutCodes stores many new codes of one project in pipelined batches, with PutCode's rule.
func (c *Cache) PutCodes(ctx context.Context, projectID string, codes []contract.CodeRecord) error {
	if err := checkCodeIDs(codes...); err != nil {
		return err
	}
	const batch = 2000
	for start := 0; start < len(codes); start += batch {
		end := min(start+batch, len(codes))
		calls := make([]*redisscript.Call, 0, end-start)
		for _, r := range codes[start:end] {
			calls = append(calls, &redisscript.Call{Script: putCodeScript, Keys: []string{codeKey(projectID, r.Code)}, Args: putCodeArgs(r)})
		}
		redisscript.Send(ctx, c.rdb, calls, nil)
		for _, call := range calls {
			if _, err := callDone(call); err != nil {
				return fmt.Errorf("put codes %d..%d: %w", start, end, err)
			}
		}
	}
	return nil
}

// checkCodeIDs refuses a code whose id is not 32 lowercase hex characters: Redis holds it as
// its 16 raw bytes, which apply.lua replies and logs.
func checkCodeIDs(codes ...contract.CodeRecord) error {
	for _, r := range codes {
		if !contract.ValidID(r.ID) {
			return fmt.Errorf("put code %q: id %q is not 32 lowercase hex characters", r.Code, r.ID)
		}
	}
	return nil
}

func putCodeArgs(r contract.CodeRecord) []interface{} {
	vat := ""
	if r.VerifiedAtMs > 0 {
		vat = strconv.FormatInt(r.VerifiedAtMs, 10)
	}
	return []interface{}{contract.RawID(r.ID), unixOrEmpty(r.ExpiresAt), vat, r.VerifiedBy, flag(r.Disabled), r.Version}
}

// MarkUnknown remembers for ttl (whole seconds, at least one: Redis would delete a key given
// less at once) that value does not exist in the project; it never replaces a real entry.
func (c *Cache) MarkUnknown(ctx context.Context, projectID, value string, ttl time.Duration) error {
	if ttl < time.Second {
		return fmt.Errorf("mark unknown code: ttl %s is under the 1s minimum", ttl)
	}
	_, err := c.runDone(ctx, "mark unknown code", unknownScript, []string{codeKey(projectID, value)}, int64(ttl/time.Second))
	return err
}

// LiveCode reads a code's live state; found is false when Redis holds nothing for the value
// or remembers it as unknown (Postgres then has the newest state).
func (c *Cache) LiveCode(ctx context.Context, projectID, value string) (r contract.CodeRecord, found bool, err error) {
	m, err := c.rdb.HGetAll(ctx, codeKey(projectID, value)).Result()
	if err != nil {
		return contract.CodeRecord{}, false, fmt.Errorf("read code: %w", translate(err))
	}
	if len(m) == 0 || m[fUnknown] == "1" {
		return contract.CodeRecord{}, false, nil
	}
	r = contract.CodeRecord{ID: contract.HexID(m[fCodeID]), ProjectID: projectID, Code: value,
		VerifiedBy: m[fVerifiedBy], Disabled: m[fDisabled] == "1"}
	if x, ok := m[fExpiresAt]; ok {
		v, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return contract.CodeRecord{}, false, fmt.Errorf("code field %s: %w", fExpiresAt, err)
		}
		r.ExpiresAt = &v
	}
	if t, ok := m[fVerifiedAt]; ok {
		if r.VerifiedAtMs, err = strconv.ParseInt(t, 10, 64); err != nil {
			return contract.CodeRecord{}, false, fmt.Errorf("code field %s: %w", fVerifiedAt, err)
		}
	}
	if r.Version, err = strconv.ParseInt(m[fVersion], 10, 64); err != nil {
		return contract.CodeRecord{}, false, fmt.Errorf("code field %s: %w", fVersion, err)
	}
	return r, true, nil
}

// SetDisabled sets or clears a code's disable flag as a new version, loading the code first
// when Redis lacks it, and returns the resulting state for the caller to write to Postgres.
func (c *Cache) SetDisabled(ctx context.Context, projectID, value string, disabled bool) (contract.CodeRecord, error) {
	out, err := c.setDisabled(ctx, projectID, []contract.CodeRecord{{Code: value}}, disabled, func([]contract.CodeRecord) error {
		if c.loader == nil {
			return errors.New("code not in redis and no loader configured")
		}
		rec, err := c.loader.CodeByValue(ctx, projectID, value)
		if err != nil {
			return fmt.Errorf("load code %q: %w", value, err)
		}
		_, err = c.PutCode(ctx, projectID, rec)
		return err
	})
	if err != nil {
		return contract.CodeRecord{}, err
	}
	return out[0], nil
}

// SetDisabledMany is SetDisabled for many codes of one project (their Postgres records),
// pipelined; a code Redis lacks is stored from its record first (PutCode's rule). It returns
// every code's resulting state for the caller to write to Postgres (store.ApplySnapshots).
func (c *Cache) SetDisabledMany(ctx context.Context, projectID string, codes []contract.CodeRecord, disabled bool) ([]contract.CodeRecord, error) {
	if err := checkCodeIDs(codes...); err != nil {
		return nil, err
	}
	return c.setDisabled(ctx, projectID, codes, disabled, func(miss []contract.CodeRecord) error {
		return c.PutCodes(ctx, projectID, miss)
	})
}

// setDisabled runs disable.lua on every code, pipelined, storing those Redis lacks with load
// and running them again, up to maxLoads rounds.
func (c *Cache) setDisabled(ctx context.Context, projectID string, codes []contract.CodeRecord, disabled bool,
	load func(miss []contract.CodeRecord) error) ([]contract.CodeRecord, error) {
	out := make([]contract.CodeRecord, len(codes))
	pending := make([]int, len(codes)) // indexes into codes still to change
	for i := range codes {
		pending[i] = i
	}
	for attempt := 0; attempt < maxLoads && len(pending) > 0; attempt++ {
		if attempt > 0 {
			miss := make([]contract.CodeRecord, len(pending))
			for j, i := range pending {
				miss[j] = codes[i]
			}
			if err := load(miss); err != nil {
				return nil, err
			}
		}
		calls := make([]*redisscript.Call, len(pending))
		for j, i := range pending {
			calls[j] = &redisscript.Call{Script: disableScript, Keys: []string{codeKey(projectID, codes[i].Code)}, Args: []interface{}{flag(disabled)}}
		}
		redisscript.Send(ctx, c.rdb, calls, nil)
		var missed []int
		for j, call := range calls {
			i := pending[j]
			if call.Err != nil {
				return nil, fmt.Errorf("set %d codes disabled: %w", len(pending), translate(call.Err))
			}
			r, err := decodeDisable(call.Reply)
			if err != nil {
				return nil, err
			}
			switch r.status {
			case statusOK:
				out[i] = contract.CodeRecord{ID: codes[i].ID, ProjectID: projectID, Code: codes[i].Code,
					VerifiedAtMs: r.verifiedAtMs, VerifiedBy: r.verifiedBy, Disabled: disabled, Version: r.version}
			case statusCodeMiss:
				missed = append(missed, i)
			default:
				return nil, fmt.Errorf("disable script replied unknown status %d", r.status)
			}
		}
		pending = missed
	}
	if len(pending) > 0 {
		return nil, fmt.Errorf("%d code states did not settle in redis after loading", len(pending))
	}
	return out, nil
}
