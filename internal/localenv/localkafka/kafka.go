// Package localkafka runs an in-process Kafka-protocol broker (kfake) for the tests and the
// benchmarks. It is kept apart from localenv so the acv binary, which uses localenv for `acv
// dev`, does not link a broker that holds everything in memory: `acv dev` needs no Kafka (its
// relay writes the logs to PostgreSQL), or uses a real one named by KAFKA_BROKERS.
package localkafka

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Broker is an in-process Kafka-protocol broker. It speaks the wire protocol kafka-go uses, so
// the relay and the consumer run against it exactly as against Apache Kafka. It keeps every
// message in memory: what it holds is gone when it closes.
type Broker struct {
	cluster *kfake.Cluster
	Brokers []string
}

// Start starts a one-broker cluster with topic created with the given partitions, listening on
// port (0 picks a free one).
func Start(topic string, partitions int, port int) (*Broker, error) {
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(int32(partitions), topic)}
	if port != 0 {
		opts = append(opts, kfake.Ports(port))
	}
	c, err := kfake.NewCluster(opts...)
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
