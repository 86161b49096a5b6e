package cache

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// Admission is a request outside verify/reactivate that needs the replay check, the token
// bucket, or both.
type Admission struct {
	ProjectID   string // the key's project: its shard holds the key's bucket and replay markers
	KeyID       string
	ReplayKey   string
	CheckReplay bool
	Limit       Limit
	Now         time.Time
}

// Admit applies the replay check and the token bucket in one round trip. It answers StatusOK,
// StatusRateLimited or StatusReplayed.
func (c *Cache) Admit(ctx context.Context, a Admission) (Result, error) {
	check := "0"
	if a.CheckReplay {
		check = "1"
	}
	keys := []string{bucketKey(a.ProjectID, a.KeyID), replayKey(a.ProjectID, a.KeyID, a.ReplayKey)}
	v, err := c.eval(ctx, admitScript, keys, a.Now.UnixMilli(), check, int64(ReplayTTL/time.Second),
		strconv.FormatFloat(a.Limit.Rate, 'f', -1, 64), a.Limit.Burst)
	if err != nil {
		return Result{}, fmt.Errorf("run admit script: %w", err)
	}
	if len(v) != 3 {
		return Result{}, fmt.Errorf("admit script replied %d fields, want 3", len(v))
	}
	return Result{
		Status: Status(toInt(v[0])),
		Rate:   RateState{Remaining: int(toInt(v[1])), Wait: time.Duration(toInt(v[2])) * time.Millisecond},
	}, nil
}
