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
	eachKafka(t, 2, func(t *testing.T, e *env) {
		project := contract.NewID()
		var evs []contract.Event
		for i := 0; i < 10; i++ {
			evs = append(evs, newEvent(project, contract.NewID(), 1))
		}
		pushAll(t, e.rdb, evs)

		pub := &gatedPublisher{inner: e.writer(t), fails: 2, entered: make(chan struct{}, 1), release: make(chan struct{})}
		cfg := relayConfig("r1")
		m, reg := newMetrics()
		cfg.Metrics = m
		relay := audit.NewRelay(e.rdb, pub, cfg)
		run := start(t, relay.Run)
		select {
		case <-pub.entered:
		case <-time.After(10 * time.Second):
			t.Fatal("relay never published")
		}
		run.cancel() // stop while the batch is in flight
		time.Sleep(100 * time.Millisecond)
		if n := outboxLen(t, e.rdb); n != int64(len(evs)) {
			t.Fatalf("outbox holds %d entries before the publish finished, want %d", n, len(evs))
		}
		close(pub.release)
		err, stopped := run.wait(10 * time.Second)
		if !stopped || err != nil {
			t.Fatalf("relay after stop: stopped %v, err %v", stopped, err)
		}
		if n := outboxLen(t, e.rdb); n != 0 {
			t.Fatalf("outbox holds %d entries after the stop, want 0", n)
		}
		if got := len(e.topicMessages(t)); got != len(evs) {
			t.Fatalf("topic holds %d messages, want %d", got, len(evs))
		}
		// One batch of all the entries, published after two failed attempts, then removed.
		errs := metricValue(t, reg, "acv_relay_errors_total")
		pubErrs := metricValue(t, reg, "acv_relay_errors_total", "stage", "publish")
		published := metricValue(t, reg, "acv_relay_published_total")
		removed := metricValue(t, reg, "acv_relay_removed_total")
		batches, entries := histogramValue(t, reg, "acv_relay_batch_size")
		lastPublish := metricValue(t, reg, "acv_relay_last_publish_timestamp_seconds")
		if errs != 2 || pubErrs != 2 || published != float64(len(evs)) || removed != float64(len(evs)) ||
			batches != 1 || entries != float64(len(evs)) || lastPublish <= 0 {
			t.Errorf("relay series: errors %v (publish %v), published %v, removed %v, %d batches of %v entries, last publish %v",
				errs, pubErrs, published, removed, batches, entries, lastPublish)
		}
	})
}
