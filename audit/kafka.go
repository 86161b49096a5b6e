package audit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
)

// EnsureTopic creates topic with the given partitions (replication 3, or the number of
// brokers when fewer) unless it exists, trying the brokers in turn.
func EnsureTopic(ctx context.Context, brokers []string, topic string, partitions int) error {
	if len(brokers) == 0 {
		return fmt.Errorf("ensure topic %s: no broker address", topic)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	var errs []error
	for _, b := range brokers {
		err := createTopic(ctx, b, topic, partitions)
		if err == nil || errors.Is(err, kafka.TopicAlreadyExists) {
			return nil
		}
		errs = append(errs, fmt.Errorf("via %s: %w", b, err))
	}
	return fmt.Errorf("ensure topic %s: %w", topic, errors.Join(errs...))
}

// createTopic asks the controller, found through broker, to create the topic.
func createTopic(ctx context.Context, broker, topic string, partitions int) error {
	cl := &kafka.Client{Addr: kafka.TCP(broker)}
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{})
	if err != nil {
		return fmt.Errorf("list brokers: %w", err)
	}
	res, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic:             topic,
		NumPartitions:     partitions,
		ReplicationFactor: min(3, max(1, len(md.Brokers))),
	}}})
	if err == nil {
		err = res.Errors[topic]
	}
	if err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	return nil
}

// NewWriter is the relay's producer: synchronous (outbox entries go only after WriteMessages
// returned), acks=all, one partition per code (hash of the key), LZ4, never creating the topic.
// Not idempotent: a retried request may store a message twice, which the sink absorbs. Its own
// transport finds a new topic, or a leader that moved after a broker died, within a second.
func NewWriter(brokers []string, topic string) *kafka.Writer {
	return &kafka.Writer{
		Addr:                   kafka.TCP(brokers...),
		Topic:                  topic,
		Balancer:               &kafka.Hash{},
		RequiredAcks:           kafka.RequireAll,
		BatchSize:              1000,
		BatchBytes:             8 << 20,
		BatchTimeout:           2 * time.Millisecond,
		Compression:            kafka.Lz4,
		MaxAttempts:            3,
		WriteBackoffMin:        retryMin,
		WriteBackoffMax:        time.Second,
		AllowAutoTopicCreation: false,
		Transport: &kafka.Transport{
			ClientID:       "acv-relay",
			DialTimeout:    5 * time.Second,
			IdleTimeout:    30 * time.Second,
			MetadataTTL:    time.Second,
			MetadataTopics: []string{topic},
		},
	}
}

// GroupLag returns, per partition of topic, how many messages the consumer group has not
// committed yet: the high watermark minus the committed offset (all of it when none is).
// It asks the brokers, so it is right for the whole group whichever member is scraped.
func GroupLag(ctx context.Context, brokers []string, topic, group string) (map[int]int64, error) {
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 5 * time.Second}
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, fmt.Errorf("kafka metadata: %w", err)
	}
	var parts []int
	for _, t := range md.Topics {
		if t.Name == topic {
			for _, p := range t.Partitions {
				parts = append(parts, p.ID)
			}
		}
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("topic %s has no partitions", topic)
	}
	reqs := make([]kafka.OffsetRequest, len(parts))
	for i, p := range parts {
		reqs[i] = kafka.LastOffsetOf(p)
	}
	offs, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return nil, fmt.Errorf("kafka list offsets: %w", err)
	}
	committed, err := cl.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
	if err != nil {
		return nil, fmt.Errorf("kafka offset fetch: %w", err)
	}
	done := map[int]int64{}
	for _, p := range committed.Topics[topic] {
		done[p.Partition] = p.CommittedOffset
	}
	lag := make(map[int]int64, len(parts))
	for _, p := range offs.Topics[topic] {
		if p.Error != nil {
			return nil, fmt.Errorf("kafka offsets of partition %d: %w", p.Partition, p.Error)
		}
		lag[p.Partition] = max(0, p.LastOffset-max(done[p.Partition], 0)) // -1: nothing committed
	}
	return lag, nil
}

var lagDesc = prometheus.NewDesc("acv_consumer_lag_messages",
	"Messages of the log topic the consumer group has not committed, per partition.", []string{"partition"}, nil)

// LagCollector reports GroupLag at scrape time.
type LagCollector struct {
	Brokers      []string
	Topic, Group string
}

// Describe implements prometheus.Collector.
func (l *LagCollector) Describe(ch chan<- *prometheus.Desc) { ch <- lagDesc }

// Collect implements prometheus.Collector; an unreachable broker yields no series, which the
// pipeline alerts see as absent.
func (l *LagCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	lag, err := GroupLag(ctx, l.Brokers, l.Topic, l.Group)
	if err != nil {
		return
	}
	for p, n := range lag {
		ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, float64(n), strconv.Itoa(p))
	}
}
