package audit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"
)

// NewWriter is the Kafka writer the relay needs: synchronous, acknowledged by all in-sync
// replicas (an acknowledged event survives a broker loss), keyed by code id through the hash
// balancer (one code, one partition, one order), and flushing after a few milliseconds so a
// small batch is not held back. It never creates the topic; EnsureTopic does, with the right
// partition count.
func NewWriter(brokers []string, topic string) *kafka.Writer {
	return &kafka.Writer{
		Addr:                   kafka.TCP(brokers...),
		Topic:                  topic,
		Balancer:               &kafka.Hash{},
		RequiredAcks:           kafka.RequireAll,
		BatchSize:              1000,
		BatchBytes:             8 << 20,
		BatchTimeout:           2 * time.Millisecond,
		MaxAttempts:            3,
		WriteBackoffMin:        retryMin,
		WriteBackoffMax:        time.Second,
		AllowAutoTopicCreation: false,
	}
}

// EnsureTopic creates topic with the given partitions when it does not exist yet, so a fresh
// deployment needs no manual Kafka setup. An existing topic is left as it is. The replication
// factor is 3, or the number of brokers when fewer. Brokers are tried in turn.
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
	var d kafka.Dialer
	conn, err := d.DialContext(ctx, "tcp", broker)
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	if err := conn.SetDeadline(deadline); err != nil {
		return fmt.Errorf("set deadline: %w", err)
	}
	ctrl, err := conn.Controller()
	if err != nil {
		return fmt.Errorf("find controller: %w", err)
	}
	all, err := conn.Brokers()
	if err != nil {
		return fmt.Errorf("list brokers: %w", err)
	}
	cc, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ctrl.Host, strconv.Itoa(ctrl.Port)))
	if err != nil {
		return fmt.Errorf("dial controller %s:%d: %w", ctrl.Host, ctrl.Port, err)
	}
	defer cc.Close()
	if err := cc.SetDeadline(deadline); err != nil {
		return fmt.Errorf("set deadline: %w", err)
	}
	err = cc.CreateTopics(kafka.TopicConfig{
		Topic:             topic,
		NumPartitions:     partitions,
		ReplicationFactor: min(3, max(1, len(all))),
	})
	if err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	return nil
}
