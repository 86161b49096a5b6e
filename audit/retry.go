package audit

import (
	"context"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// Retry delays: short enough that a blip costs little latency, capped so a long outage does
// not hammer the dependency that is down.
const (
	retryMin = 50 * time.Millisecond
	retryMax = 5 * time.Second
)

// newBackOff is the delay policy between retries: from about retryMin, doubling, jittered by
// ±50% so replicas do not retry in lockstep; the jitter applies on top of MaxInterval, so no
// delay exceeds retryMax. Reset it after a success.
func newBackOff() *backoff.ExponentialBackOff {
	return &backoff.ExponentialBackOff{
		InitialInterval:     retryMin,
		RandomizationFactor: 0.5,
		Multiplier:          2,
		MaxInterval:         retryMax * 2 / 3,
	}
}

// retry runs fn until it succeeds, calling failed with each error and then waiting a backoff
// delay; it returns the last error, or ctx's when ctx ended before a success.
func retry(ctx context.Context, fn func() error, failed func(error)) error {
	bo := newBackOff()
	for {
		err := fn()
		if err == nil || ctx.Err() != nil {
			return err
		}
		failed(err)
		if !sleep(ctx, bo.NextBackOff()) {
			return err
		}
	}
}

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
