package audit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/trace"

	"github.com/acv/acv/api/contract"
)

// Sink stores events durably (the Postgres store). ApplyEvents must be idempotent by event id
// (the pipeline is at-least-once); inserted counts only the events it did not hold yet.
type Sink interface {
	ApplyEvents(ctx context.Context, events []contract.Event) (inserted int, err error)
}

// ConsumerConfig tunes a Consumer. Zero values take the defaults named on each field.
type ConsumerConfig struct {
	// Brokers are the Kafka bootstrap addresses.
	Brokers []string
	// Topic is the topic to consume. Default Topic.
	Topic string
	// GroupID is the Kafka consumer group; replicas sharing it split the partitions.
	// Default "acv-log-writer".
	GroupID string
	// BatchSize is the most messages given to the sink at once. Default 1000.
	BatchSize int
	// BatchWait is how long a batch waits to fill after its first message. Default 50ms.
	BatchWait time.Duration
	// HeartbeatInterval, SessionTimeout, RebalanceTimeout and JoinGroupBackoff shape group
	// membership (kafka-go's defaults when zero). SessionTimeout is how long a silent member's
	// partitions wait before they move (within the broker's group.min.session.timeout.ms); with
	// it and no HeartbeatInterval, the heartbeat goes every third of it, at most every 3s.
	HeartbeatInterval time.Duration
	SessionTimeout    time.Duration
	RebalanceTimeout  time.Duration
	JoinGroupBackoff  time.Duration
	// Logger receives retries and skipped messages. Default slog.Default().
	Logger *slog.Logger
	// BeforeCommit is a test hook, called after the sink stored a batch and before its offsets
	// are committed; an error stops Run there, as if the process died.
	BeforeCommit func() error
	// Metrics receives the consumer's series; nil records nothing.
	Metrics *Metrics
	// Tracer makes a write span per traced event; nil makes none.
	Tracer trace.TracerProvider
}

func (c ConsumerConfig) withDefaults() ConsumerConfig {
	c.Topic, c.GroupID = cmp.Or(c.Topic, Topic), cmp.Or(c.GroupID, "acv-log-writer")
	c.BatchSize = orDefault(c.BatchSize, 1000)
	c.BatchWait = orDefault(c.BatchWait, 50*time.Millisecond)
	if c.SessionTimeout > 0 && c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = min(3*time.Second, c.SessionTimeout/3)
	}
	c.Logger, c.Metrics = cmp.Or(c.Logger, slog.Default()), c.Metrics.orNone()
	return c
}

// Consumer applies the events of a Kafka topic to a Sink in batches, committing offsets only
// after the sink stored them: never lost, at worst applied twice (which the sink ignores).
type Consumer struct {
	cfg ConsumerConfig
	w   *logWriter
	r   *kafka.Reader
}

// NewConsumer builds a consumer of cfg.Topic in group cfg.GroupID. A new group starts at the
// oldest retained message. Like kafka.NewReader, it panics when cfg.Brokers is empty.
func NewConsumer(cfg ConsumerConfig, sink Sink) *Consumer {
	cfg = cfg.withDefaults()
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:           cfg.Brokers,
		Topic:             cfg.Topic,
		GroupID:           cfg.GroupID,
		MinBytes:          1,
		MaxBytes:          10 << 20,
		MaxWait:           500 * time.Millisecond, // bounds one broker fetch
		QueueCapacity:     cfg.BatchSize,
		CommitInterval:    0, // synchronous commits: CommitMessages returns once committed
		StartOffset:       kafka.FirstOffset,
		HeartbeatInterval: cfg.HeartbeatInterval,
		SessionTimeout:    cfg.SessionTimeout,
		RebalanceTimeout:  cfg.RebalanceTimeout,
		JoinGroupBackoff:  cfg.JoinGroupBackoff,
		ReadBackoffMin:    retryMin,
		ReadBackoffMax:    time.Second,
		ErrorLogger: kafka.LoggerFunc(func(msg string, args ...any) {
			cfg.Logger.Warn("audit consumer: kafka: " + fmt.Sprintf(msg, args...))
		}),
	})
	w := &logWriter{name: "audit consumer", sink: sink, log: cfg.Logger, metrics: cfg.Metrics, tracer: cfg.Tracer}
	return &Consumer{cfg: cfg, w: w, r: r}
}

// Close leaves the consumer group, so its partitions move to another member at once, and
// releases the connections. Run must have returned.
func (c *Consumer) Close() error {
	if err := c.r.Close(); err != nil {
		return fmt.Errorf("close kafka reader: %w", err)
	}
	return nil
}

// Run consumes until ctx ends, then returns nil. It returns an error when the BeforeCommit hook
// fails or the consumer was closed.
func (c *Consumer) Run(ctx context.Context) error {
	bo := newBackOff()
	for {
		batch, err := c.fetch(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("audit consumer: reader closed: %w", err)
			}
			c.cfg.Metrics.consumerErrors.WithLabelValues("fetch").Inc()
			c.cfg.Logger.Warn("audit consumer: fetch", "err", err)
			if !sleep(ctx, bo.NextBackOff()) {
				return nil
			}
			continue
		}
		bo.Reset()
		if events := c.w.decode(batch); len(events) > 0 {
			if err := retry(ctx, func() error { return c.w.store(ctx, events, batch) }, func(err error) {
				c.cfg.Logger.Warn("audit consumer: store events", "events", len(events), "err", err)
			}); err != nil {
				return nil // stopping: the batch is not committed, so it is delivered again
			}
		}
		if c.cfg.BeforeCommit != nil {
			if err := c.cfg.BeforeCommit(); err != nil {
				return fmt.Errorf("audit consumer: before-commit hook: %w", err)
			}
		}
		c.commit(ctx, batch)
	}
}

// fetch waits for one message, then gathers more until the batch is full or BatchWait passed.
func (c *Consumer) fetch(ctx context.Context) ([]kafka.Message, error) {
	m, err := c.r.FetchMessage(ctx)
	if err != nil {
		return nil, fmt.Errorf("fetch message: %w", err)
	}
	batch := make([]kafka.Message, 1, c.cfg.BatchSize)
	batch[0] = m
	fill, cancel := context.WithTimeout(ctx, c.cfg.BatchWait)
	defer cancel()
	for len(batch) < c.cfg.BatchSize {
		m, err := c.r.FetchMessage(fill)
		if err != nil {
			break // the wait is over (or the reader failed: the next fetch reports it)
		}
		batch = append(batch, m)
	}
	return batch, nil
}

// commit commits the batch's offsets, also while stopping (the batch is stored). A commit that
// keeps failing is given up: the batch is delivered again, and the sink skips it.
func (c *Consumer) commit(ctx context.Context, batch []kafka.Message) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	bo := newBackOff()
	for attempt := 1; ; attempt++ {
		err := c.r.CommitMessages(cctx, batch...)
		if err == nil {
			c.cfg.Metrics.lastCommit.Set(unixSeconds(time.Now()))
			return
		}
		c.cfg.Metrics.consumerErrors.WithLabelValues("commit").Inc()
		c.cfg.Logger.Warn("audit consumer: commit offsets", "messages", len(batch), "attempt", attempt, "err", err)
		if attempt == 3 || !sleep(cctx, bo.NextBackOff()) {
			return
		}
	}
}
