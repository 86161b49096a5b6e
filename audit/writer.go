package audit

import (
	"time"

	"github.com/segmentio/kafka-go"
)

// NewWriter is the Kafka producer the relay needs: synchronous (the relay deletes outbox
// entries only after WriteMessages returned), acks=all (an acknowledged event survives the
// loss of a broker, with min.insync.replicas 2), keyed by code id through the hash balancer
// (one code, one partition, one order), batched, LZ4-compressed, and never creating the topic
// (EnsureTopic does). It is not idempotent (kafka-go has no idempotent producer): a retried
// request may store a message twice, which the sink absorbs by event id.
//
// Its transport is its own, not kafka-go's shared default, so a topic created just before is
// known and a partition leader that moved after a broker died is found within a second.
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
