package audit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ensureGroup creates the relay consumer group on a stream, and the stream itself when no
// event was written yet. It starts at id 0, not $, so entries appended before the first relay
// ever ran are delivered too. A group that already exists is fine.
func ensureGroup(ctx context.Context, rdb redis.Cmdable, key string) error {
	err := rdb.XGroupCreateMkStream(ctx, key, RelayGroup, "0").Err()
	if err != nil && !redis.HasErrorPrefix(err, "BUSYGROUP") {
		return fmt.Errorf("create group %s on %s: %w", RelayGroup, key, err)
	}
	return nil
}

// isNoGroup tells whether err says the stream or its group is gone (someone deleted the key),
// which the relay repairs by creating them again.
func isNoGroup(err error) bool {
	return redis.HasErrorPrefix(err, "NOGROUP")
}

// readEntries reads up to count entries of a stream for consumer. id ">" asks for new entries,
// waiting up to block; id "0" re-reads the consumer's own pending entries, without waiting.
// No entry is not an error.
func readEntries(ctx context.Context, rdb redis.Cmdable, key, consumer, id string, count int, block time.Duration) ([]redis.XMessage, error) {
	args := &redis.XReadGroupArgs{
		Group:    RelayGroup,
		Consumer: consumer,
		Streams:  []string{key, id},
		Count:    int64(count),
		Block:    -1,
	}
	if id == ">" {
		args.Block = block
	}
	streams, err := rdb.XReadGroup(ctx, args).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("xreadgroup %s id %s: %w", key, id, err)
	}
	var out []redis.XMessage
	for _, s := range streams {
		out = append(out, s.Messages...)
	}
	return out, nil
}

// claimEntries takes over up to count entries that sat unacknowledged in any consumer of the
// group for longer than minIdle, starting the scan at start. It returns the claimed entries and
// where the next scan continues ("0-0" when the pending list was scanned to its end).
func claimEntries(ctx context.Context, rdb redis.Cmdable, key, consumer, start string, minIdle time.Duration, count int) ([]redis.XMessage, string, error) {
	msgs, next, err := rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
		Stream:   key,
		Group:    RelayGroup,
		Consumer: consumer,
		MinIdle:  minIdle,
		Start:    start,
		Count:    int64(count),
	}).Result()
	if err != nil {
		return nil, "", fmt.Errorf("xautoclaim %s: %w", key, err)
	}
	return msgs, next, nil
}

// removeEntries acknowledges and deletes entries in one transaction, so an entry is never left
// acknowledged but still in the stream (or the reverse) by a crash between the two.
func removeEntries(ctx context.Context, rdb redis.Cmdable, key string, ids []string) error {
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.XAck(ctx, key, RelayGroup, ids...)
		p.XDel(ctx, key, ids...)
		return nil
	})
	if err != nil {
		return fmt.Errorf("xack+xdel %d entries of %s: %w", len(ids), key, err)
	}
	return nil
}
