package audit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/redis/go-redis/v9"
)

// OutboxLen sums the entries still held by the outboxes and reports the age of the oldest one.
// Entries leave the outbox only after Kafka acknowledged them, so this is the part of the
// pipeline's lag that sits in Redis, and a growing age means the relay is stuck.
func OutboxLen(ctx context.Context, rdb redis.Cmdable, outboxes []string) (length int64, oldestAge time.Duration, err error) {
	lens := make([]*redis.IntCmd, len(outboxes))
	heads := make([]*redis.StringCmd, len(outboxes))
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, key := range outboxes {
			lens[i] = p.LLen(ctx, key)
			heads[i] = p.LIndex(ctx, key, 0)
		}
		return nil
	})
	now := time.Now()
	for i := range outboxes {
		for _, c := range []redis.Cmder{lens[i], heads[i]} {
			if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
				return 0, 0, fmt.Errorf("read outbox lengths: %w", err)
			}
		}
		length += lens[i].Val()
		if head := heads[i].Val(); head != "" {
			// A head that does not decode is published as it is (and counted), not aged.
			if ev, _, derr := contract.DecodeOutboxEntry(head); derr == nil {
				oldestAge = max(oldestAge, now.Sub(time.UnixMilli(ev.TS)))
			}
		}
	}
	return length, oldestAge, nil
}
