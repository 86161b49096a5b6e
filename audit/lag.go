package audit

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// OutboxLen sums the entries still held by the outbox streams and reports the age of the
// oldest one. Entries leave the outbox only after Kafka acknowledged them, so this is the part
// of the pipeline's lag that sits in Redis, and a growing age means the relay is stuck.
func OutboxLen(ctx context.Context, rdb redis.Cmdable, streams []string) (length int64, oldestAge time.Duration, err error) {
	lens := make([]*redis.IntCmd, len(streams))
	firsts := make([]*redis.XMessageSliceCmd, len(streams))
	_, err = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for s, key := range streams {
			lens[s] = p.XLen(ctx, key)
			firsts[s] = p.XRangeN(ctx, key, "-", "+", 1)
		}
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("read outbox lengths: %w", err)
	}
	now := time.Now()
	for s, key := range streams {
		length += lens[s].Val()
		msgs := firsts[s].Val()
		if len(msgs) == 0 {
			continue
		}
		ms, perr := entryMillis(msgs[0].ID)
		if perr != nil {
			return 0, 0, fmt.Errorf("outbox %s: %w", key, perr)
		}
		if age := now.Sub(time.UnixMilli(ms)); age > oldestAge {
			oldestAge = age
		}
	}
	return length, oldestAge, nil
}

// entryMillis is the Unix-millisecond timestamp a stream entry id ("ms-seq") starts with.
func entryMillis(id string) (int64, error) {
	ms, _, _ := strings.Cut(id, "-")
	v, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse stream entry id %q: %w", id, err)
	}
	return v, nil
}
