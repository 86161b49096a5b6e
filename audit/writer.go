package audit

import (
	"time"

	"github.com/segmentio/kafka-go"
)

// NewWriter is the Kafka producer the relay needs:
//
//   - synchronous: WriteMessages returns once the brokers acknowledged every message, and the
//     relay deletes outbox entries only after that;
//   - acks=all (RequiredAcks -1): the leader answers once every in-sync replica has the batch,
//     and with the topic's min.insync.replicas (2 of 3 in production) an acknowledged event
//     survives the loss of a broker;
//   - keyed by code id through the hash balancer: one code, one partition, one order;
//   - batched: a poll's entries (up to RelayConfig.Batch per outbox) go to one WriteMessages
//     call; each partition's messages go out as produce requests of up to 1000 messages or
//     8 MiB, after at most 2 ms of lingering for more;
//   - compressed with LZ4 per batch: a batch's events repeat their project id, action, time
//     digits and verifier, so they shrink well, and LZ4 is cheap to compress and decompress
//     (kafka-go's reader handles it transparently);
//   - never creating the topic (EnsureTopic does, with the right partition count).
//
// It is not idempotent: kafka-go's writer has no idempotent producer (its record batches carry
// producer id -1, no sequence numbers), so a produce request retried after a lost
// acknowledgement may store a message twice, as a relay that dies between Kafka's
// acknowledgement and the outbox removal does. Both are absorbed downstream: the sink stores an
// event once by its id.
//
// The writer has a transport of its own rather than kafka-go's process-wide default one, which
// answers metadata from a cache shared by every client of the process: its view of the topic
// (which broker leads which partition) starts when the writer does, so a topic created just
// before is known, and is refreshed about every second instead of six, so a partition leader
// that moved after a broker died is found quickly. Only the topic's metadata is asked for.
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
