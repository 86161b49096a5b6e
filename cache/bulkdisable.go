package cache

import (
	"context"
	"fmt"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/redisscript"
)

// SetDisabledMany is SetDisabled for many codes of one project, pipelined: one round trip a
// few thousand codes instead of one a code. codes are the codes' records as Postgres holds
// them; a code Redis does not hold is stored from its record first (PutCode's rule: a state
// Redis already has wins), then changed. It returns, for every code, the resulting state with
// its id, which the caller writes to Postgres (store.ApplySnapshots).
func (c *Cache) SetDisabledMany(ctx context.Context, projectID string, codes []contract.CodeRecord, disabled bool) ([]contract.CodeRecord, error) {
	for _, r := range codes {
		if err := checkCodeID(r); err != nil {
			return nil, err
		}
	}
	flag := "0"
	if disabled {
		flag = "1"
	}
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
			if err := c.PutCodes(ctx, projectID, miss); err != nil {
				return nil, err
			}
		}
		calls := make([]*redisscript.Call, len(pending))
		for j, i := range pending {
			calls[j] = &redisscript.Call{Script: disableScript, Keys: []string{codeKey(projectID, codes[i].Code)}, Args: []interface{}{flag}}
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
