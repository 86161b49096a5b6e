package audit

import (
	"context"
	"math/rand/v2"
	"time"
)

// Retry delays: short enough that a blip costs little latency, capped so a long outage does
// not hammer the dependency that is down.
const (
	retryMin = 50 * time.Millisecond
	retryMax = 5 * time.Second
)

// backoff yields exponentially growing, jittered delays between retries of one operation, so
// replicas retrying the same outage do not do it in lockstep.
type backoff struct {
	cur time.Duration
}

// next is the delay before the next attempt.
func (b *backoff) next() time.Duration {
	switch {
	case b.cur == 0:
		b.cur = retryMin
	case b.cur < retryMax:
		b.cur = min(2*b.cur, retryMax)
	}
	return b.cur/2 + rand.N(b.cur/2+1)
}

// reset starts over after a success.
func (b *backoff) reset() { b.cur = 0 }

// sleep waits d, or less when ctx ends; it tells whether the full delay passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
