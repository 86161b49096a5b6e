package cache

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/acv/acv/api/contract"
)

// Status is the explicit status number a script replies with; success is never inferred from
// the other reply fields.
type Status int

// Script statuses, matching the numbers in scripts/apply.lua and scripts/admit.lua.
const (
	StatusOK              Status = 0
	StatusCodeMiss        Status = 1 // the code is not in Redis: load it from Postgres and call again
	StatusProjectMiss     Status = 2 // the project is not in Redis: load it and call again
	StatusRateLimited     Status = 3
	StatusReplayed        Status = 4
	StatusIdemConflict    Status = 5
	StatusIdemReplayed    Status = 6
	ReplayTTL                    = 2*contract.SignatureWindow*time.Second + 60*time.Second
	IdempotencyTTL               = 24 * time.Hour
	defaultUnknownCodeTTL        = 5 * time.Minute
)

// Limit is a key's token bucket: Rate tokens a second up to Burst. A zero Rate is unlimited.
type Limit struct {
	Rate  float64
	Burst int
}

// Call is one verify or reactivate as the hot path sees it.
type Call struct {
	Action         contract.Action
	ProjectID      string
	KeyID          string
	Code           string
	By             string // verified_by or reactivated_by
	Reason         string // reactivation reason
	IP             string
	ReplayKey      string // X-Nonce, or X-Signature when no nonce was sent
	IdempotencyKey string // "" when none
	RequestHash    string // identifies the request an Idempotency-Key was first used with
	Limit          Limit
	EventID        string
	TraceParent    string // W3C trace context carried with the log event, "" when none
	Now            time.Time
}

// RateState is what the token bucket said, for the X-RateLimit-* headers.
type RateState struct {
	Remaining int           // -1 when unlimited
	Wait      time.Duration // until the next token, when limited
}

// Result is the script's decision.
type Result struct {
	Status  Status
	Outcome contract.Outcome // set for StatusOK and StatusIdemReplayed
	Rate    RateState
}

// Apply runs one verify or reactivate in one script call. A StatusCodeMiss or
// StatusProjectMiss result changed nothing: load the missing entry and call again.
func (c *Cache) Apply(ctx context.Context, call Call) (Result, error) {
	idem := "0"
	if call.IdempotencyKey != "" {
		idem = "1"
	}
	keys := []string{
		codeKey(call.ProjectID, call.Code),
		projectKey(call.ProjectID),
		contract.OutboxKey(contract.Shard(call.ProjectID)),
		bucketKey(call.ProjectID, call.KeyID),
		replayKey(call.ProjectID, call.KeyID, call.ReplayKey),
		idemKey(call.ProjectID, call.KeyID, call.IdempotencyKey),
	}
	nowMs := call.Now.UnixMilli()
	v, err := c.eval(ctx, applyScript, keys,
		string(call.Action), nowMs, call.EventID, call.ProjectID, call.By, call.Reason, call.IP,
		int64(ReplayTTL/time.Second), idem, call.RequestHash, int64(IdempotencyTTL/time.Second),
		strconv.FormatFloat(call.Limit.Rate, 'f', -1, 64), call.Limit.Burst, call.TraceParent,
	)
	if err != nil {
		return Result{}, fmt.Errorf("run apply script: %w", err)
	}
	if len(v) != 7 {
		return Result{}, fmt.Errorf("apply script replied %d fields, want 7", len(v))
	}
	r := Result{
		Status: Status(toInt(v[0])),
		Rate:   RateState{Remaining: int(toInt(v[5])), Wait: time.Duration(toInt(v[6])) * time.Millisecond},
	}
	if r.Status == StatusOK || r.Status == StatusIdemReplayed {
		r.Outcome = contract.Outcome{
			Action:     call.Action,
			Code:       call.Code,
			Error:      contract.ErrorCode(toString(v[1])),
			CodeID:     toString(v[2]),
			VerifiedAt: toInt(v[3]),
			At:         toInt(v[4]),
		}
	}
	return r, nil
}

func toInt(v interface{}) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

func toString(v interface{}) string {
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}
