package audit_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/audit"
	"github.com/acv/acv/internal/testkit"
)

// The relay removes what it relayed by trimming the stream below the oldest entry still
// pending: entries another consumer holds stay, with every entry after them, until they are
// relayed too; then the stream is empty, and every event was stored once.
func TestTrimKeepsEntriesOthersHold(t *testing.T) {
	rdb := directRedis(t)
	ctx := context.Background()
	project := contract.NewID()
	stream := streamOf(project)
	var evs []contract.Event
	for i := 0; i < 30; i++ {
		evs = append(evs, newEvent(project, contract.NewID(), 1))
	}
	xaddAll(t, rdb, evs)
	// A consumer that then dies holds the first five.
	if err := rdb.XGroupCreateMkStream(ctx, stream, audit.RelayGroup, "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: audit.RelayGroup, Consumer: "dead",
		Streams: []string{stream, ">"}, Count: 5}).Err(); err != nil {
		t.Fatal(err)
	}

	sink := newMemSink()
	cfg := relayConfig("r1")
	cfg.ClaimIdle, cfg.ClaimEvery = 3*time.Second, 200*time.Millisecond
	start(t, audit.NewRelay(rdb, &audit.SinkPublisher{Sink: sink}, cfg).Run)
	waitRows(t, sink, 25)
	if n := outboxLen(t, rdb); n != 30 {
		t.Fatalf("outbox holds %d entries while the dead consumer holds the first 5, want all 30", n)
	}
	// Once the dead consumer's entries are claimed and relayed, nothing is left.
	waitRows(t, sink, 30)
	waitOutboxEmpty(t, rdb)
	sink.checkRows(t, evs)

	// Entries appended later are relayed and removed as well.
	more := []contract.Event{newEvent(project, contract.NewID(), 1), newEvent(project, contract.NewID(), 1)}
	xaddAll(t, rdb, more)
	waitRows(t, sink, 32)
	waitOutboxEmpty(t, rdb)
	testkit.WaitFor(t, 5*time.Second, "nothing pending", func() (bool, string) {
		p, err := rdb.XPending(ctx, stream, audit.RelayGroup).Result()
		return err == nil && p.Count == 0, fmt.Sprintf("%+v %v", p, err)
	})
}
