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

// A large batch is removed by trimming the stream when no older entry is pending, and id by id
// when another consumer holds one: entries that consumer holds stay until they are relayed too,
// nothing acknowledged stays behind, and every event is stored once.
func TestLargeBatchesTrimAroundEntriesOthersHold(t *testing.T) {
	rdb := directRedis(t)
	ctx := context.Background()
	project := contract.NewID()
	stream := streamOf(project)
	batch := func(n int) []contract.Event {
		var evs []contract.Event
		for i := 0; i < n; i++ {
			evs = append(evs, newEvent(project, contract.NewID(), 1))
		}
		return evs
	}
	evs := batch(40)
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
	waitRows(t, sink, 35)
	testkit.WaitFor(t, 5*time.Second, "the relayed 35 removed, the dead consumer's 5 kept", func() (bool, string) {
		n := outboxLen(t, rdb)
		return n == 5, fmt.Sprintf("%d entries", n)
	})
	// Once the dead consumer's entries are claimed and relayed, nothing is left.
	waitRows(t, sink, 40)
	waitOutboxEmpty(t, rdb)

	// A large batch with nothing older pending is trimmed away.
	more := batch(30)
	xaddAll(t, rdb, more)
	waitRows(t, sink, 70)
	waitOutboxEmpty(t, rdb)
	sink.checkRows(t, append(evs, more...))
	if p, err := rdb.XPending(ctx, stream, audit.RelayGroup).Result(); err != nil || p.Count != 0 {
		t.Fatalf("pending after the relay removed everything: %+v %v", p, err)
	}
}
