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

// retry runs fn until it succeeds or ctx ends, calling failed with each error before a delay.
func retry(ctx context.Context, fn func() error, failed func(error)) error {
	_, err := backoff.Retry(ctx, func() (struct{}, error) { return struct{}{}, fn() }, backoff.WithBackOff(newBackOff()),
		backoff.WithMaxElapsedTime(0), backoff.WithNotify(func(err error, _ time.Duration) { failed(err) }))
	return err
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
