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

// removeEntries acknowledges entries and drops from the stream every entry the relays are done
// with, in one transaction: XACK, then trimScript, which deletes with one XTRIM MINID whatever
// lies below the oldest entry still pending in the group (or, when none is, up to the last one
// delivered). For Redis that costs a fraction of deleting each id (XDEL finds every id by
// scanning its node of the stream; the trim drops whole nodes). An entry is never deleted
// unacknowledged: every entry below the bound was delivered and none is pending, and an entry
// that is not pending never becomes so again. An acknowledged entry may stay a while behind an
// older one another relay has not acknowledged yet: the acknowledgement of that one removes
// both. The stream must have no consumer group but the relay's.
func removeEntries(ctx context.Context, rdb redis.Cmdable, key string, ids []string) error {
	var ack *redis.IntCmd
	var trim *redis.Cmd
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		ack = p.XAck(ctx, key, RelayGroup, ids...)
		trim = trimScript.EvalSha(ctx, p, []string{key}, RelayGroup)
		return nil
	})
	if ack != nil && ack.Err() == nil && trim != nil && redis.HasErrorPrefix(trim.Err(), "NOSCRIPT") {
		// Redis forgot the script (a restart): the entries are acknowledged, the trim runs
		// alone (it holds no state of this batch), sending the script's source.
		err = trimScript.Run(ctx, rdb, []string{key}, RelayGroup).Err()
	}
	if err != nil {
		return fmt.Errorf("xack+trim %d entries of %s: %w", len(ids), key, err)
	}
	return nil
}

// trimScript trims a stream to the entries its consumer group is not done with.
//
// KEYS[1] the stream; ARGV[1] its consumer group. Reply: the number of entries deleted.
var trimScript = redis.NewScript(`
local p = redis.call('XPENDING', KEYS[1], ARGV[1])
local bound = p[2]
if not bound then
  local last
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
    local name, ld
    for i = 1, #g, 2 do
      if g[i] == 'name' then name = g[i + 1] elseif g[i] == 'last-delivered-id' then ld = g[i + 1] end
    end
    if name == ARGV[1] then last = ld end
  end
  if not last then
    return 0
  end
  local ms, seq = string.match(last, '^(%d+)%-(%d+)$')
  bound = ms .. '-' .. (seq + 1)
end
return redis.call('XTRIM', KEYS[1], 'MINID', bound)
`)
