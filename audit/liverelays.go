package audit

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// LiveRelays counts the relays whose heartbeat on outboxes has not expired at now: the
// members of the set the relays share the outboxes by (lease.go), each scored with the time
// its heartbeat expires. Zero while log events are being written means nothing moves them to
// PostgreSQL.
func LiveRelays(ctx context.Context, rdb redis.Cmdable, outboxes []string, now time.Time) (int64, error) {
	n, err := rdb.ZCount(ctx, membersKeyOf(outboxes), strconv.FormatInt(now.UnixMilli(), 10), "+inf").Result()
	if err != nil {
		return 0, fmt.Errorf("count live relays: %w", err)
	}
	return n, nil
}
