package audit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/redis/go-redis/v9"
)

// OutboxLen sums the entries still held by the outboxes (and by the previous format's streams,
// legacy, while an upgrade drains them) and reports the age of the oldest one. Entries leave
// the outbox only after Kafka acknowledged them, so this is the part of the pipeline's lag that
// sits in Redis, and a growing age means the relay is stuck.
func OutboxLen(ctx context.Context, rdb redis.Cmdable, outboxes, legacy []string) (length int64, oldestAge time.Duration, err error) {
	lens := make([]*redis.IntCmd, len(outboxes))
	heads := make([]*redis.StringCmd, len(outboxes))
	slens := make([]*redis.IntCmd, len(legacy))
	firsts := make([]*redis.XMessageSliceCmd, len(legacy))
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, key := range outboxes {
			lens[i] = p.LLen(ctx, key)
			heads[i] = p.LIndex(ctx, key, 0)
		}
		for i, key := range legacy {
			slens[i] = p.XLen(ctx, key)
			firsts[i] = p.XRangeN(ctx, key, "-", "+", 1)
		}
		return nil
	})
	for _, c := range append(append(append(cmdsOf(lens), cmdsOf(heads)...), cmdsOf(slens)...), cmdsOf(firsts)...) {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return 0, 0, fmt.Errorf("read outbox lengths: %w", err)
		}
	}
	now := time.Now()
	oldest := func(ms int64) {
		if age := now.Sub(time.UnixMilli(ms)); age > oldestAge {
			oldestAge = age
		}
	}
	for i := range outboxes {
		length += lens[i].Val()
		if head := heads[i].Val(); head != "" {
			// A head that does not decode is published as it is (and counted), not aged.
			if ev, _, derr := contract.DecodeOutboxEntry(head); derr == nil {
				oldest(ev.TS)
			}
		}
	}
	for i, key := range legacy {
		length += slens[i].Val()
		if msgs := firsts[i].Val(); len(msgs) > 0 {
			ms, perr := entryMillis(msgs[0].ID)
			if perr != nil {
				return 0, 0, fmt.Errorf("outbox %s: %w", key, perr)
			}
			oldest(ms)
		}
	}
	return length, oldestAge, nil
}

// cmdsOf lists a pipeline's commands of one kind as redis.Cmder, to check their errors.
func cmdsOf[C redis.Cmder](cmds []C) []redis.Cmder {
	out := make([]redis.Cmder, len(cmds))
	for i, c := range cmds {
		out[i] = c
	}
	return out
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
