package audit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
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

// removeEntries acknowledges entries and deletes them from the stream, atomically, so an entry
// is never left acknowledged but still in the stream (or the reverse) by a crash between the
// two. A small batch is XACK and XDEL in a MULTI. XDEL finds each id by scanning its node of
// the stream from the node's start, which costs Redis some 2 µs an entry once entries are
// small; so a batch of trimAt entries or more goes to removeScript instead, which trims the
// stream when it can (one XTRIM MINID drops whole nodes).
func removeEntries(ctx context.Context, rdb redis.Cmdable, key string, ids []string) error {
	var err error
	if len(ids) >= trimAt && len(ids) <= trimMax {
		args := make([]interface{}, 0, 2+len(ids))
		args = append(args, RelayGroup, nextID(ids))
		for _, id := range ids {
			args = append(args, id)
		}
		err = removeScript.Run(ctx, rdb, []string{key}, args...).Err()
	} else {
		_, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.XAck(ctx, key, RelayGroup, ids...)
			p.XDel(ctx, key, ids...)
			return nil
		})
	}
	if err != nil {
		return fmt.Errorf("xack+xdel %d entries of %s: %w", len(ids), key, err)
	}
	return nil
}

// removeScript takes batches of trimAt to trimMax entries: below trimAt, XDEL of each id costs
// Redis less than the script's own calls; above trimMax, the ids would not fit Lua's stack.
const (
	trimAt  = 16
	trimMax = 4096
)

// removeScript acknowledges a batch and, when no entry at or below the batch's highest id is
// still pending in the group, trims the stream below the next id (XTRIM MINID): every entry
// there was delivered (the group delivers in order) and none is pending, so all are
// acknowledged, and an entry that is not pending never becomes so again. Otherwise (another
// consumer holds an older entry, or one among the batch's ids) it deletes the batch's ids, as
// XDEL always did. Either way no acknowledged entry is left behind, and nothing else is taken.
// The stream must have no consumer group but the relay's.
//
// KEYS[1] the stream; ARGV[1] its consumer group; ARGV[2] the id following the batch's highest;
// ARGV[3..] the batch's ids. Reply: the number of entries deleted.
var removeScript = redis.NewScript(`
redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, 3))
local p = redis.call('XPENDING', KEYS[1], ARGV[1])[2]
if p then
  local pms, pseq = string.match(p, '^(%d+)%-(%d+)$')
  local bms, bseq = string.match(ARGV[2], '^(%d+)%-(%d+)$')
  pms, bms = tonumber(pms), tonumber(bms)
  if pms < bms or (pms == bms and tonumber(pseq) < tonumber(bseq)) then
    return redis.call('XDEL', KEYS[1], unpack(ARGV, 3))
  end
end
return redis.call('XTRIM', KEYS[1], 'MINID', ARGV[2])
`)

// nextID is the stream id just after the highest of ids ("ms-seq" each).
func nextID(ids []string) string {
	var ms, seq uint64
	for _, id := range ids {
		m, s := splitID(id)
		if m > ms || (m == ms && s > seq) {
			ms, seq = m, s
		}
	}
	if seq == math.MaxUint64 {
		return strconv.FormatUint(ms+1, 10) + "-0"
	}
	return strconv.FormatUint(ms, 10) + "-" + strconv.FormatUint(seq+1, 10)
}

func splitID(id string) (ms, seq uint64) {
	m, s, _ := strings.Cut(id, "-")
	ms, _ = strconv.ParseUint(m, 10, 64)
	seq, _ = strconv.ParseUint(s, 10, 64)
	return ms, seq
}
