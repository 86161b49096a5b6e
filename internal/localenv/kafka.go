package localenv

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Kafka is an in-process Kafka-protocol broker. It speaks the wire protocol kafka-go uses, so
// the relay and the consumer run against it exactly as against Apache Kafka.
type Kafka struct {
	cluster *kfake.Cluster
	Brokers []string
}

// StartKafka starts a one-broker cluster with topic created with the given partitions.
func StartKafka(topic string, partitions int, port int) (*Kafka, error) {
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(int32(partitions), topic)}
	if port != 0 {
		opts = append(opts, kfake.Ports(port))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("start kfake broker: %w", err)
	}
	return &Kafka{cluster: c, Brokers: c.ListenAddrs()}, nil
}

// Close stops the broker.
func (k *Kafka) Close() {
	if k != nil {
		k.cluster.Close()
	}
}
