package audit_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/audit"
)

// gatedPublisher wraps the real writer: it fails the first fails calls, and holds every call
// until release is closed, telling entered when one is waiting.
type gatedPublisher struct {
	inner   audit.Publisher
	mu      sync.Mutex
	fails   int
	entered chan struct{}
	release chan struct{}
}

func (g *gatedPublisher) WriteMessages(ctx context.Context, msgs ...kafka.Message) error {
	g.mu.Lock()
	fail := g.fails > 0
	if fail {
		g.fails--
	}
	g.mu.Unlock()
	if fail {
		return errors.New("kafka unavailable")
	}
	select {
	case g.entered <- struct{}{}:
	default:
	}
	<-g.release
	return g.inner.WriteMessages(ctx, msgs...)
}

// Kafka failures are retried, never dropped; a stop lets the batch in flight finish (publish
// and removal) before Run returns nil.
func TestRelayRetriesAndFinishesInFlightBatchOnStop(t *testing.T) {
	e := newEnv(t, 2)
	project := contract.NewID()
	var evs []contract.Event
	for i := 0; i < 10; i++ {
		evs = append(evs, newEvent(project, contract.NewID(), 1))
	}
	xaddAll(t, e.rdb, evs)

	pub := &gatedPublisher{inner: e.writer(t), fails: 2, entered: make(chan struct{}, 1), release: make(chan struct{})}
	relay := audit.NewRelay(e.rdb, pub, relayConfig("r1"))
	run := start(t, relay.Run)
	select {
	case <-pub.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("relay never published")
	}
	run.cancel() // stop while the batch is in flight
	time.Sleep(100 * time.Millisecond)
	if n, _, _ := audit.OutboxLen(context.Background(), e.rdb); n != int64(len(evs)) {
		t.Fatalf("outbox holds %d entries before the publish finished, want %d", n, len(evs))
	}
	close(pub.release)
	err, stopped := run.wait(10 * time.Second)
	if !stopped || err != nil {
		t.Fatalf("relay after stop: stopped %v, err %v", stopped, err)
	}
	if n, _, _ := audit.OutboxLen(context.Background(), e.rdb); n != 0 {
		t.Fatalf("outbox holds %d entries after the stop, want 0", n)
	}
	if got := len(e.topicMessages(t)); got != len(evs) {
		t.Fatalf("topic holds %d messages, want %d", got, len(evs))
	}
	if rs := relay.Stats(); rs.Errors != 2 || rs.Published != int64(len(evs)) || rs.Removed != int64(len(evs)) || rs.LastBatchSize != len(evs) || rs.LastPublish.IsZero() {
		t.Errorf("relay stats %+v", rs)
	}
}
