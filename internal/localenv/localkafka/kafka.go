// Package localkafka runs an in-process Kafka-protocol broker (kfake) for the tests and the
// benchmarks, apart from localenv so the acv binary does not link it.
package localkafka

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Broker is an in-process broker speaking the protocol kafka-go uses; it keeps every message in
// memory until it closes.
type Broker struct {
	cluster *kfake.Cluster
	Brokers []string
}

// Start starts a one-broker cluster on a free port with topic created with the given partitions.
func Start(topic string, partitions int) (*Broker, error) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(partitions), topic))
	if err != nil {
		return nil, fmt.Errorf("start kfake broker: %w", err)
	}
	return &Broker{cluster: c, Brokers: c.ListenAddrs()}, nil
}

// Close stops the broker.
func (k *Broker) Close() {
	if k != nil {
		k.cluster.Close()
	}
}
