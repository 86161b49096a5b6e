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
