package audit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/trace"

	"github.com/acv/acv/internal/redisscript"
)

// Publisher sends messages and returns once they are acknowledged (NewWriter's *kafka.Writer,
// or SinkPublisher): the relay removes outbox entries only after that.
type Publisher interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
}

// RelayConfig tunes a Relay. Zero values take the defaults named on each field.
type RelayConfig struct {
	// Outboxes are the outbox lists to relay, one a shard. Required.
	Outboxes []string
	// Name is this replica's relay name, stable across restarts and unique among the relays, so
	// a restarted relay takes its outboxes back at once. Default: the host name.
	Name string
	// Batch is the most entries read from one outbox per poll. Default 1000.
	Batch int
	// Poll and IdlePoll pace the polls: after one that read pollTarget entries (or a whole Batch
	// of one outbox) the next comes at once, after fewer a pause from Poll to IdlePoll (nothing
	// read). Defaults 10ms and 100ms.
	Poll     time.Duration
	IdlePoll time.Duration
	// TrimEvery: published entries are removed once trimAt of them wait, or the oldest has
	// waited TrimEvery; a relay that dies publishes up to that many again. Default 1s.
	TrimEvery time.Duration
	// Lease is how long a relay holds an outbox without renewing it (every third of it), and so
	// how long a dead relay's outboxes wait for the others. Default 5s.
	Lease time.Duration
	// Workers is how many outbox groups are relayed concurrently. Default 1: a second halves
	// every Kafka write, doubling produce requests.
	Workers int
	// Logger receives retries and anomalies. Default slog.Default().
	Logger *slog.Logger
	// AfterPublish is a test hook, called with a batch's entries after Kafka acknowledged them
	// and before their removal; an error stops Run there as if the process died.
	AfterPublish func(entries []string) error
	// Metrics receives the relay's series; nil records nothing.
	Metrics *Metrics
	// Tracer makes a publish span per traced event; nil makes none.
	Tracer trace.TracerProvider
}

// pollTarget is how many entries a poll aims at, so each Kafka request carries about that many;
// trimAt is how many published entries wait at most before their removal; shutdownGrace is how
// long in-flight batches may still take once Run's context ended.
const (
	pollTarget    = 2000
	trimAt        = 1000
	shutdownGrace = 10 * time.Second
)

func (c RelayConfig) withDefaults() RelayConfig {
	if c.Name == "" {
		c.Name, _ = os.Hostname()
		c.Name = cmp.Or(c.Name, "relay")
	}
	c.Batch, c.Workers = orDefault(c.Batch, 1000), orDefault(c.Workers, 1)
	c.Poll, c.TrimEvery, c.Lease = orDefault(c.Poll, 10*time.Millisecond), orDefault(c.TrimEvery, time.Second), orDefault(c.Lease, 5*time.Second)
	if c.IdlePoll < c.Poll {
		c.IdlePoll = max(100*time.Millisecond, c.Poll)
	}
	c.Logger, c.Metrics = cmp.Or(c.Logger, slog.Default()), c.Metrics.orNone()
	return c
}

// orDefault is v, or def when v is not positive.
func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Relay moves outbox entries from Redis to Kafka at-least-once, removing them only after Kafka
// acknowledged them. Several replicas share the outboxes by leases (lease.go).
type Relay struct {
	rdb redis.Cmdable
	pub Publisher
	cfg RelayConfig
}

// NewRelay builds a relay reading rdb's outboxes (every command names one key, so a cluster
// client fits) and writing to pub.
func NewRelay(rdb redis.Cmdable, pub Publisher, cfg RelayConfig) *Relay {
	return &Relay{rdb: rdb, pub: pub, cfg: cfg.withDefaults()}
}

// errAbandoned says a batch was left in the outbox because the relay is stopping; any other
// error of a worker is the AfterPublish hook's, the one that stops Run.
var errAbandoned = errors.New("relay stopping: batch left in the outbox")

// Run relays until ctx ends. When ctx ends, batches in flight are still published and removed
// (within shutdownGrace), the leases are given up, then Run returns nil. It returns an error
// only when no outbox is configured or the AfterPublish hook fails.
func (r *Relay) Run(ctx context.Context) error {
	if len(r.cfg.Outboxes) == 0 {
		return errors.New("outbox relay: no outbox configured")
	}
	// ops outlives ctx so in-flight batches can finish; it ends after the grace period, on a
	// hook failure (the simulated death must abort every worker at once), or when Run returns.
	ops, kill := context.WithCancelCause(context.WithoutCancel(ctx))
	defer kill(nil)
	stopGrace := context.AfterFunc(ctx, func() {
		time.AfterFunc(shutdownGrace, func() { kill(errAbandoned) })
	})
	defer stopGrace()

	// loop ends the reading loops: when ctx ends (stop taking new work) or ops does (abort).
	loop, stopLoop := context.WithCancel(ops)
	defer stopLoop()
	stopAfter := context.AfterFunc(ctx, stopLoop)
	defer stopAfter()

	// Load the scripts before the first poll; a node that lacks one later gets it when a call
	// finds it missing (runScripts).
	for _, sc := range []*redisscript.Script{trimScript, acquireScript, releaseScript} {
		_ = sc.Load(ops, r.rdb)
	}
	ls := newLeases(r.rdb, r.cfg.Outboxes, r.cfg.Name, r.cfg.Lease)
	var wg sync.WaitGroup
	wg.Go(func() { r.keepLeases(loop, ls) })
	for w := range r.cfg.Workers {
		wg.Go(func() {
			if err := r.runWorker(loop, ops, ls, w); err != nil {
				kill(err)
			}
		})
	}
	wg.Wait() // every worker returns only once loop ended, and so does the keeper
	if cause := context.Cause(ops); cause != nil && !errors.Is(cause, errAbandoned) {
		return cause // a simulated death keeps its leases, as a dead process would
	}
	if err := ls.releaseAll(ops); err != nil {
		r.cfg.Logger.Warn("outbox relay: give up leases", "err", err)
	}
	return nil
}

func (r *Relay) keepLeases(ctx context.Context, ls *leases) {
	log := r.cfg.Logger.With("relay", r.cfg.Name)
	for {
		if err := ls.round(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Metrics.relayErrors.WithLabelValues("lease").Inc()
			log.Warn("outbox relay: leases", "err", err)
		}
		r.cfg.Metrics.held.Set(float64(ls.count()))
		r.cfg.Metrics.relays.Set(float64(ls.relays.Load()))
		if !sleep(ctx, r.cfg.Lease/3) {
			return
		}
	}
}

// outboxState is what a worker knows of an outbox it relays: the prefix it published and has
// not removed yet. The next read starts after it.
type outboxState struct {
	read  int       // entries published from the head and not removed yet
	first string    // the entry at index 0 when they were read
	last  string    // the entry at index read-1
	since time.Time // when the oldest of them was published
}

// batch is one poll's worth of entries across a worker's outboxes.
type batch struct {
	msgs    []kafka.Message
	entries []string
	read    map[int][]string // outbox index → entries read from it, in order
}

// runWorker relays the held outboxes i with i % Workers == w until ctx ends; ops carries the
// calls, so the batch in flight can finish. It returns only a hook error.
func (r *Relay) runWorker(ctx, ops context.Context, ls *leases, w int) error {
	log := r.cfg.Logger.With("relay", r.cfg.Name, "worker", w)
	states := map[int]*outboxState{}
	bo := newBackOff()
	pause := time.Duration(0)
	for {
		if pause > 0 && !sleep(ctx, pause) {
			break
		}
		if ctx.Err() != nil {
			break
		}
		var mine []int
		for i := w; i < len(r.cfg.Outboxes); i += r.cfg.Workers {
			if ls.Held(i) {
				mine = append(mine, i)
			}
		}
		b, full, err := r.poll(ops, mine, states)
		if err != nil {
			if ops.Err() != nil {
				break
			}
			r.cfg.Metrics.relayErrors.WithLabelValues("read").Inc()
			log.Warn("outbox relay: read", "err", err)
			pause = bo.NextBackOff()
			continue
		}
		if len(b.entries) > 0 {
			if err := r.deliver(ops, b, states, log); errors.Is(err, errAbandoned) {
				break // the relay is stopping
			} else if err != nil {
				return err
			}
		}
		if err := r.trim(ops, states, false, log); err != nil {
			pause = bo.NextBackOff()
			continue
		}
		bo.Reset()
		pause = r.pause(len(b.msgs), full)
	}
	// Stopping: remove what was published, so a successor does not publish it again.
	if ops.Err() == nil {
		_ = r.trim(ops, states, true, log)
	}
	return nil
}

// pause is the wait after a poll that read n entries (see pollTarget).
func (r *Relay) pause(n int, full bool) time.Duration {
	if full || n >= pollTarget {
		return 0
	}
	span := r.cfg.IdlePoll - r.cfg.Poll
	return r.cfg.Poll + span*time.Duration(pollTarget-n)/time.Duration(pollTarget)
}

// poll reads the next entries of each outbox in mine, after the prefix already published.
// full tells whether some outbox had a whole Batch to give (poll again at once).
func (r *Relay) poll(ctx context.Context, mine []int, states map[int]*outboxState) (b batch, full bool, err error) {
	if len(mine) == 0 {
		return b, false, nil
	}
	keys := make([]string, len(mine))
	offsets := make([]int, len(mine))
	for j, i := range mine {
		keys[j] = r.cfg.Outboxes[i]
		if st := states[i]; st != nil {
			offsets[j] = st.read
		}
	}
	got, err := readOutboxes(ctx, r.rdb, keys, offsets, r.cfg.Batch)
	if err != nil {
		return b, false, err
	}
	b.read = map[int][]string{}
	for j, entries := range got {
		if len(entries) == 0 {
			continue
		}
		full = full || len(entries) == r.cfg.Batch
		b.read[mine[j]] = entries
		for _, e := range entries {
			m, malformed := toMessage(e)
			if malformed {
				r.cfg.Metrics.relayErrors.WithLabelValues("decode").Inc()
				r.cfg.Logger.Error("outbox relay: malformed outbox entry", "outbox", keys[j], "bytes", len(e))
			}
			b.msgs = append(b.msgs, m)
			b.entries = append(b.entries, e)
		}
	}
	return b, full, nil
}

// deliver publishes a batch, retrying until it succeeds or ops ends (errAbandoned: the entries
// stay in the outbox), and records its entries as published in their outboxes' states.
func (r *Relay) deliver(ops context.Context, b batch, states map[int]*outboxState, log *slog.Logger) error {
	start := time.Now()
	spans := startSpans(r.cfg.Tracer, publishSpanName(r.pub), trace.SpanKindProducer, b.msgs, true)
	err := retry(ops, func() error { return r.pub.WriteMessages(ops, b.msgs...) }, func(err error) {
		r.cfg.Metrics.relayErrors.WithLabelValues("publish").Inc()
		log.Warn("outbox relay: publish to kafka", "messages", len(b.msgs), "err", err)
	})
	endSpans(spans, err)
	if err != nil {
		return errAbandoned
	}
	now := time.Now()
	m := r.cfg.Metrics
	m.publishLatency.WithLabelValues("outbox").Observe(now.Sub(start).Seconds())
	m.batchSize.Observe(float64(len(b.msgs)))
	m.relayed.Add(float64(len(b.msgs)))
	m.lastPublish.Set(unixSeconds(now))
	if r.cfg.AfterPublish != nil {
		if err := r.cfg.AfterPublish(b.entries); err != nil {
			return fmt.Errorf("after-publish hook: %w", err)
		}
	}
	now = time.Now()
	for i, entries := range b.read {
		st := states[i]
		if st == nil {
			st = &outboxState{}
			states[i] = st
		}
		if st.read == 0 {
			st.first, st.since = entries[0], now
		}
		st.read += len(entries)
		st.last = entries[len(entries)-1]
	}
	return nil
}

// trim removes the published prefixes that are due (all with all set), in one pipeline. A
// refused trim (the outbox changed under another relay) forgets the prefix, so the next poll
// reads from the head again; a Redis error keeps the states and is returned.
func (r *Relay) trim(ctx context.Context, states map[int]*outboxState, all bool, log *slog.Logger) error {
	now := time.Now()
	var due []int
	var calls []*redisscript.Call
	for i, st := range states {
		if st.read > 0 && (all || st.read >= trimAt || now.Sub(st.since) >= r.cfg.TrimEvery) {
			due = append(due, i)
			calls = append(calls, trimCall(r.cfg.Outboxes[i], st))
		}
	}
	done, err := runScripts(ctx, r.rdb, calls)
	removed := 0
	for c, i := range due {
		if calls[c].Err != nil {
			continue
		}
		if done[c] {
			removed += states[i].read
		} else {
			r.cfg.Metrics.trimsRefused.Inc()
			log.Info("outbox relay: outbox changed under another relay; reading it again from the head",
				"outbox", r.cfg.Outboxes[i], "published", states[i].read)
		}
		delete(states, i)
	}
	r.cfg.Metrics.removed.Add(float64(removed))
	if err != nil {
		r.cfg.Metrics.relayErrors.WithLabelValues("remove").Inc()
		log.Warn("outbox relay: remove published entries", "err", err)
		return err
	}
	return nil
}
