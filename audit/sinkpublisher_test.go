package audit_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/audit"
	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/testkit"
)

// directRedis is a Redis of its own for a direct-pipeline test: no Kafka involved.
func directRedis(t *testing.T) *redis.Client {
	t.Helper()
	r := testkit.RedisServer(t, localenv.RedisOptions{})
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr, PoolSize: 64})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func waitOutboxEmpty(t *testing.T, rdb redis.Cmdable) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, "outbox empty", func() (bool, string) {
		n := outboxLen(t, rdb)
		return n == 0, fmt.Sprintf("%d entries", n)
	})
}

// heldSink holds every ApplyEvents call until release is closed, and records how many outbox
// entries were still in Redis while a call was held.
type heldSink struct {
	*memSink
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (s *heldSink) ApplyEvents(ctx context.Context, events []contract.Event) (int, error) {
	s.once.Do(func() { close(s.entered) })
	select {
	case <-s.release:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return s.memSink.ApplyEvents(ctx, events)
}

// The direct pipeline stores every event once in the sink, and an outbox entry leaves Redis
// only after the sink stored its event: while the sink is held or failing, every entry stays.
func TestDirectPipelineRemovesOnlyStoredEvents(t *testing.T) {
	rdb := directRedis(t)
	evs := spreadEvents(300, 30)
	pushAll(t, rdb, evs)

	sink := &heldSink{memSink: newMemSink(), entered: make(chan struct{}), release: make(chan struct{})}
	sink.fails = 3
	m, reg := newMetrics()
	cfg := relayConfig("r1")
	cfg.Batch = 50
	cfg.Metrics = m
	start(t, audit.NewRelay(rdb, &audit.SinkPublisher{Sink: sink, Metrics: m}, cfg).Run)

	select {
	case <-sink.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the relay never wrote to the sink")
	}
	time.Sleep(200 * time.Millisecond)
	if n := outboxLen(t, rdb); n != int64(len(evs)) {
		t.Fatalf("outbox holds %d entries while the sink has stored nothing, want all %d", n, len(evs))
	}
	close(sink.release)
	waitRows(t, sink.memSink, len(evs))
	waitOutboxEmpty(t, rdb)
	sink.checkRows(t, evs)
	if errs := metricValue(t, reg, "acv_relay_errors_total", "stage", "publish"); errs < 3 {
		t.Errorf("relay counted %v failed writes, want at least the sink's 3", errs)
	}
	if w := metricValue(t, reg, "acv_consumer_events_written_total"); w != float64(len(evs)) {
		t.Errorf("acv_consumer_events_written_total = %v, want %d", w, len(evs))
	}
	if c, _ := histogramValue(t, reg, "acv_audit_delay_seconds"); c != uint64(len(evs)) {
		t.Errorf("audit delay observed %d events, want %d", c, len(evs))
	}
	if last := metricValue(t, reg, "acv_consumer_last_commit_timestamp_seconds"); last == 0 {
		t.Error("acv_consumer_last_commit_timestamp_seconds not set")
	}
}

// A relay that dies after the sink stored a batch but before removing its entries leaves them
// in the outbox; the restarted relay writes them again and the sink keeps one row per event.
func TestDirectPipelineCrashAfterWrite(t *testing.T) {
	rdb := directRedis(t)
	evs := spreadEvents(200, 20)
	pushAll(t, rdb, evs)
	sink := newMemSink()

	cfg := relayConfig("r1")
	cfg.Batch = 20
	cfg.AfterPublish = func([]string) error { return errCrash }
	dead := audit.NewRelay(rdb, &audit.SinkPublisher{Sink: sink}, cfg)
	err, stopped := start(t, dead.Run).wait(10 * time.Second)
	if !stopped || !errors.Is(err, errCrash) {
		t.Fatalf("crashed relay: stopped %v, err %v; want the hook error", stopped, err)
	}
	if rows, _ := sink.counts(); rows == 0 {
		t.Fatal("the crashed relay stored nothing before dying")
	}
	if n := outboxLen(t, rdb); n != int64(len(evs)) {
		t.Fatalf("outbox holds %d entries after the crash, want all %d", n, len(evs))
	}

	m, reg := newMetrics()
	cfg = relayConfig("r1")
	start(t, audit.NewRelay(rdb, &audit.SinkPublisher{Sink: sink, Metrics: m}, cfg).Run)
	waitRows(t, sink, len(evs))
	waitOutboxEmpty(t, rdb)
	sink.checkRows(t, evs)
	if dups := metricValue(t, reg, "acv_consumer_duplicates_skipped_total"); dups == 0 {
		t.Error("the restarted relay re-sent nothing the sink already held")
	}
}

// An outbox entry that is no event is counted and skipped; the good ones are stored.
func TestDirectPipelineSkipsMalformedEntries(t *testing.T) {
	rdb := directRedis(t)
	ctx := context.Background()
	good := newEvent(contract.NewID(), contract.NewID(), 1)
	if err := rdb.RPush(ctx, outboxKey(2), "{not json").Err(); err != nil {
		t.Fatal(err)
	}
	if err := push(ctx, rdb, good); err != nil {
		t.Fatal(err)
	}
	sink := newMemSink()
	m, reg := newMetrics()
	start(t, audit.NewRelay(rdb, &audit.SinkPublisher{Sink: sink, Metrics: m}, relayConfig("r1")).Run)
	waitRows(t, sink, 1)
	waitOutboxEmpty(t, rdb)
	sink.checkRows(t, []contract.Event{good})
	if bad := metricValue(t, reg, "acv_consumer_errors_total", "stage", "decode"); bad != 1 {
		t.Errorf("%v malformed entries counted, want 1", bad)
	}
}

// A traced event stays one trace without Kafka: the relay's span hangs under the request's, and
// the Postgres write under the relay's.
func TestDirectPipelineTrace(t *testing.T) {
	rdb := directRedis(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, req := tp.Tracer("test").Start(context.Background(), "request")
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	req.End()
	pushCompact(t, rdb, carrier["traceparent"])
	sink := newMemSink()
	cfg := relayConfig("r1")
	cfg.Tracer = tp
	start(t, audit.NewRelay(rdb, &audit.SinkPublisher{Sink: sink, Tracer: tp}, cfg).Run)
	waitRows(t, sink, 1)

	spans := map[string]sdktrace.ReadOnlySpan{}
	testkit.WaitFor(t, 5*time.Second, "the pipeline's spans", func() (bool, string) {
		for _, sp := range exp.GetSpans().Snapshots() {
			spans[sp.Name()] = sp
		}
		return len(spans) == 3, fmt.Sprintf("%d spans", len(spans))
	})
	relay, write := spans["relay deliver verification logs"], spans["postgres write verification logs"]
	if relay == nil || write == nil {
		t.Fatalf("spans %v, want the relay's and the write's", spans)
	}
	if relay.Parent().SpanID() != req.SpanContext().SpanID() || write.Parent().SpanID() != relay.SpanContext().SpanID() {
		t.Errorf("spans do not chain request → relay → write: relay's parent %s, write's parent %s",
			relay.Parent().SpanID(), write.Parent().SpanID())
	}
	if write.SpanContext().TraceID() != req.SpanContext().TraceID() {
		t.Error("the postgres write is not in the request's trace")
	}
}
