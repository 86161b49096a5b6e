package audit

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/trace"
)

// Publisher sends messages to Kafka and returns once the brokers acknowledged them. The relay
// deletes outbox entries only after that, so it needs a synchronous writer; *kafka.Writer with
// RequiredAcks = kafka.RequireAll (see NewWriter) fits.
type Publisher interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
}

// RelayConfig tunes a Relay. Zero values take the defaults named on each field.
type RelayConfig struct {
	// Streams are the outbox streams to relay; the wiring takes them from the cache's layout.
	// Required: Run refuses to start without one.
	Streams []string
	// Name is this replica's consumer name in the relay group. Keep it stable across restarts
	// (a pod name of a StatefulSet, a host name) so a restarted replica re-reads its own pending
	// entries at once instead of waiting for ClaimIdle. Default: the host name.
	Name string
	// Batch is the most entries read per XREADGROUP per stream, and so per Kafka write.
	// Default 500.
	Batch int
	// Block is how long XREADGROUP waits for new entries; it bounds how late a stop is noticed.
	// Default 100ms.
	Block time.Duration
	// ClaimIdle is how long an entry may sit delivered-but-unacknowledged in another consumer
	// before this relay takes it over; it must exceed the longest healthy publish. Default 30s.
	ClaimIdle time.Duration
	// ClaimEvery is how often each stream is scanned for such entries. Default 5s.
	ClaimEvery time.Duration
	// ShutdownGrace is how long, once Run's context ended, the in-flight batches may still take
	// to be published and removed; after it they are abandoned (still pending, so they are
	// published again later). Default 10s.
	ShutdownGrace time.Duration
	// Logger receives retries and anomalies. Default slog.Default().
	Logger *slog.Logger
	// AfterPublish is a test hook, called after Kafka acknowledged a batch and before its
	// entries are removed from the outbox. An error stops the relay as if the process died
	// right there: nothing of that batch is acknowledged or deleted, and Run returns the error.
	AfterPublish func(entryIDs []string) error
	// Metrics receives the relay's series; nil records nothing.
	Metrics *Metrics
	// Tracer makes a publish span per traced event; nil makes none.
	Tracer trace.TracerProvider
}

// withDefaults fills the zero fields.
func (c RelayConfig) withDefaults() RelayConfig {
	if c.Name == "" {
		c.Name, _ = os.Hostname()
		if c.Name == "" {
			c.Name = "relay"
		}
	}
	if c.Batch <= 0 {
		c.Batch = 500
	}
	if c.Block <= 0 {
		c.Block = 100 * time.Millisecond
	}
	if c.ClaimIdle <= 0 {
		c.ClaimIdle = 30 * time.Second
	}
	if c.ClaimEvery <= 0 {
		c.ClaimEvery = 5 * time.Second
	}
	if c.ShutdownGrace <= 0 {
		c.ShutdownGrace = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Relay moves outbox entries from the Redis streams to Kafka: at-least-once, never dropping
// one, deleting an entry only after Kafka acknowledged it. Several replicas may run at once;
// they share the streams through the relay consumer group.
type Relay struct {
	rdb redis.Cmdable
	pub Publisher
	cfg RelayConfig
}

// NewRelay builds a relay reading rdb's outbox streams and writing to pub. rdb may be a
// *redis.Client or *redis.ClusterClient (each stream lives in one slot). The relay keeps one
// connection per stream busy in a blocking read, so give it its own client, with a pool of at
// least one per stream and a few more, rather than the hot path's.
func NewRelay(rdb redis.Cmdable, pub Publisher, cfg RelayConfig) *Relay {
	return &Relay{rdb: rdb, pub: pub, cfg: cfg.withDefaults()}
}

// hookError marks the failure of the AfterPublish hook, the one error that stops Run.
type hookError struct{ err error }

func (e *hookError) Error() string { return "after-publish hook: " + e.err.Error() }
func (e *hookError) Unwrap() error { return e.err }

// errAbandoned says a batch was left pending because the relay is stopping.
var errAbandoned = errors.New("relay stopping: batch left pending")

// Run relays until ctx ends, one goroutine per outbox stream. When ctx ends, batches in flight
// are still published and removed (within ShutdownGrace), then Run returns nil. It returns an
// error only when no stream is configured or the AfterPublish hook fails.
func (r *Relay) Run(ctx context.Context) error {
	if len(r.cfg.Streams) == 0 {
		return errors.New("outbox relay: no outbox stream configured")
	}
	// ops outlives ctx so in-flight batches can finish; it ends after the grace period, on a
	// hook failure (the simulated death must abort every stream at once), or when Run returns.
	ops, kill := context.WithCancelCause(context.WithoutCancel(ctx))
	defer kill(nil)
	go func() {
		select {
		case <-ctx.Done():
		case <-ops.Done():
			return
		}
		t := time.NewTimer(r.cfg.ShutdownGrace)
		defer t.Stop()
		select {
		case <-t.C:
			kill(errAbandoned)
		case <-ops.Done():
		}
	}()

	// loop ends the reading loops: when ctx ends (stop taking new work) or ops does (abort).
	loop, stopLoop := context.WithCancel(ops)
	defer stopLoop()
	stopAfter := context.AfterFunc(ctx, stopLoop)
	defer stopAfter()

	var wg sync.WaitGroup
	for _, key := range r.cfg.Streams {
		wg.Add(1)
		go func(key string) {
			defer wg.Done()
			if err := r.runStream(loop, ops, key); err != nil {
				kill(err)
			}
		}(key)
	}
	wg.Wait()
	var he *hookError
	if cause := context.Cause(ops); errors.As(cause, &he) {
		return he
	}
	return nil
}

// runStream relays one stream until ctx ends; ops carries the Redis and Kafka calls, so they
// can finish the batch in flight after ctx ended. It first drains this consumer's own pending
// entries (left by a previous run that died), then reads new ones, and every ClaimEvery takes
// over entries stuck in dead consumers. It returns only a hook error.
func (r *Relay) runStream(ctx, ops context.Context, key string) error {
	log := r.cfg.Logger.With("stream", key, "consumer", r.cfg.Name)
	bo := newBackOff()
	for {
		err := ensureGroup(ops, r.rdb, key)
		if err == nil {
			break
		}
		r.cfg.Metrics.relayError("read")
		log.Warn("outbox relay: create consumer group", "err", err)
		if !sleep(ctx, bo.NextBackOff()) {
			return nil
		}
	}
	bo.Reset()

	id := "0" // own pending entries first; ">" once they are drained
	nextClaim := time.Now()
	for ctx.Err() == nil {
		if !time.Now().Before(nextClaim) {
			if err := r.claimStream(ctx, ops, key, log); err != nil {
				return err
			}
			nextClaim = time.Now().Add(r.cfg.ClaimEvery)
		}
		msgs, err := readEntries(ops, r.rdb, key, r.cfg.Name, id, r.cfg.Batch, r.cfg.Block)
		if err != nil {
			if ops.Err() != nil {
				return nil
			}
			r.cfg.Metrics.relayError("read")
			log.Warn("outbox relay: read", "err", err)
			if isNoGroup(err) {
				if err := ensureGroup(ops, r.rdb, key); err != nil {
					log.Warn("outbox relay: recreate consumer group", "err", err)
				}
			}
			id = "0"
			sleep(ctx, bo.NextBackOff())
			continue
		}
		if len(msgs) == 0 {
			id = ">"
			continue
		}
		if err := r.deliver(ops, key, msgs, log); err != nil {
			var he *hookError
			if errors.As(err, &he) {
				return err
			}
			// Abandoned: the entries stay pending for us; re-read them before new ones.
			id = "0"
			sleep(ctx, bo.NextBackOff())
			continue
		}
		bo.Reset()
	}
	return nil
}

// claimStream takes over, in batches, every entry of the stream idle for longer than ClaimIdle
// in any consumer, and relays it.
func (r *Relay) claimStream(ctx, ops context.Context, key string, log *slog.Logger) error {
	start := "0-0"
	for ctx.Err() == nil {
		msgs, next, err := claimEntries(ops, r.rdb, key, r.cfg.Name, start, r.cfg.ClaimIdle, r.cfg.Batch)
		if err != nil {
			if ops.Err() == nil {
				r.cfg.Metrics.relayError("claim")
				log.Warn("outbox relay: claim idle entries", "err", err)
			}
			return nil // try again at the next ClaimEvery
		}
		if len(msgs) > 0 {
			r.cfg.Metrics.claimedEntries(len(msgs))
			log.Info("outbox relay: claimed idle entries", "count", len(msgs))
			if err := r.deliver(ops, key, msgs, log); err != nil {
				var he *hookError
				if errors.As(err, &he) {
					return err
				}
				return nil
			}
		}
		if next == "0-0" || next == "" {
			return nil
		}
		start = next
	}
	return nil
}

// deliver publishes a batch of entries and then removes them from the outbox. A failed Kafka
// write or removal is retried with backoff until it succeeds or ops ends (then errAbandoned:
// the entries stay pending and are published again later, which the sink's dedup absorbs).
func (r *Relay) deliver(ops context.Context, key string, entries []redis.XMessage, log *slog.Logger) error {
	ids := make([]string, 0, len(entries))
	msgs := make([]kafka.Message, 0, len(entries))
	for _, e := range entries {
		ids = append(ids, e.ID)
		if e.Values == nil {
			continue // already deleted while pending: nothing left to publish, only to acknowledge
		}
		m, ok, malformed := toMessage(e)
		if malformed {
			r.cfg.Metrics.relayError("decode")
			log.Error("outbox relay: malformed outbox entry", "id", e.ID, "published", ok)
		}
		if ok {
			msgs = append(msgs, m)
		}
	}

	bo := newBackOff()
	if len(msgs) > 0 {
		start := time.Now()
		spans := startSpans(r.cfg.Tracer, publishSpanName(r.pub), trace.SpanKindProducer, msgs, true)
		for {
			err := r.pub.WriteMessages(ops, msgs...)
			if err == nil {
				endSpans(spans, nil)
				break
			}
			if ops.Err() != nil {
				endSpans(spans, err)
				return errAbandoned
			}
			r.cfg.Metrics.relayError("publish")
			log.Warn("outbox relay: publish to kafka", "messages", len(msgs), "err", err)
			if !sleep(ops, bo.NextBackOff()) {
				endSpans(spans, err)
				return errAbandoned
			}
		}
		now := time.Now()
		r.cfg.Metrics.publishedBatch(len(msgs), len(entries), now.Sub(start), now)
	}

	if r.cfg.AfterPublish != nil {
		if err := r.cfg.AfterPublish(ids); err != nil {
			return &hookError{err: err}
		}
	}

	bo.Reset()
	for {
		err := removeEntries(ops, r.rdb, key, ids)
		if err == nil {
			break
		}
		if ops.Err() != nil {
			return errAbandoned
		}
		r.cfg.Metrics.relayError("remove")
		log.Warn("outbox relay: remove published entries", "err", err)
		if !sleep(ops, bo.NextBackOff()) {
			return errAbandoned
		}
	}
	r.cfg.Metrics.removedEntries(len(ids))
	return nil
}
