package localenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/segmentio/kafka-go"
)

// The cluster's own view, asked over the wire with kafka-go's Client, which negotiates each
// request's version with the broker (ApiVersions): what a fault test asserts on (who leads a
// partition, which replicas are in sync) and waits for.

// metadata asks node n for the cluster's metadata of topics (none: brokers only), through a
// transport of its own: kafka-go's transports answer metadata requests from what they learnt
// when they connected, so only a new one gives today's answer.
func (n *KafkaNode) metadata(ctx context.Context, topics ...string) (*kafka.MetadataResponse, error) {
	tr := &kafka.Transport{DialTimeout: 2 * time.Second}
	defer tr.CloseIdleConnections()
	cl := &kafka.Client{Addr: kafka.TCP(n.Addr), Timeout: 5 * time.Second, Transport: tr}
	if topics == nil {
		topics = []string{}
	}
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		return nil, fmt.Errorf("kafka node %d metadata: %w", n.ID, err)
	}
	return md, nil
}

// Metadata asks the first running node that answers for the cluster's metadata of topics.
func (k *Kafka) Metadata(ctx context.Context, topics ...string) (*kafka.MetadataResponse, error) {
	var errs []error
	for _, n := range k.Running() {
		md, err := n.metadata(ctx, topics...)
		if err == nil {
			return md, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil, errors.New("kafka: no node is running")
	}
	return nil, errors.Join(errs...)
}

// WaitReady waits until every running node answers a metadata request listing every running
// node as a broker (a restarted broker is listed once it registered with the controller and
// was unfenced), or fails after within with each node's log tail.
func (k *Kafka) WaitReady(ctx context.Context, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	var last error
	for {
		running := k.Running()
		if len(running) == 0 {
			return fmt.Errorf("kafka %s: no node is running (they exited?)%s", k.Version, k.logTails())
		}
		last = nil
		for _, n := range running {
			md, err := n.metadata(ctx)
			if err != nil {
				last = err
				break
			}
			if len(md.Brokers) < len(running) {
				last = fmt.Errorf("node %d lists %d brokers of %d running", n.ID, len(md.Brokers), len(running))
				break
			}
		}
		if last == nil {
			return nil
		}
		for _, n := range k.Nodes {
			n.mu.Lock()
			exited := n.proc != nil && n.proc.Exited()
			n.mu.Unlock()
			if exited && n.wasStarted() {
				return fmt.Errorf("kafka %s node %d exited while starting%s", k.Version, n.ID, k.logTails())
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kafka %s not ready after %s: %v%s", k.Version, within, last, k.logTails())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// wasStarted tells whether the node's current process was started to run (not one stopped or
// killed on purpose): its exit during a wait is a failure.
func (n *KafkaNode) wasStarted() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc != nil && !n.stopped
}

// CreateTopic creates topic with the given partitions and replication factor (0: the
// cluster's default, three or the number of nodes when fewer), and waits until every partition
// has a leader that answers, so producing to it right away succeeds.
func (k *Kafka) CreateTopic(ctx context.Context, topic string, partitions, replicationFactor int) error {
	if replicationFactor <= 0 {
		replicationFactor = min(3, len(k.Nodes))
	}
	running := k.Running()
	if len(running) == 0 {
		return fmt.Errorf("create topic %s: no kafka node is running", topic)
	}
	tr := &kafka.Transport{DialTimeout: 2 * time.Second}
	defer tr.CloseIdleConnections()
	cl := &kafka.Client{Addr: kafka.TCP(running[0].Addr), Timeout: 30 * time.Second, Transport: tr}
	res, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic: topic, NumPartitions: partitions, ReplicationFactor: replicationFactor,
	}}})
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	if err := res.Errors[topic]; err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return k.waitTopic(ctx, topic, partitions, 30*time.Second)
}

// waitTopic waits until every running node's metadata shows every partition of topic with a
// leader: brokers learn of a new topic from the controller one by one, and a client
// bootstrapping from one that has not yet is told the topic does not exist.
func (k *Kafka) waitTopic(ctx context.Context, topic string, partitions int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		var last error
		for _, n := range k.Running() {
			if last = n.topicLed(ctx, topic, partitions); last != nil {
				break
			}
		}
		if last == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topic %s not ready after %s: %w", topic, within, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// topicLed tells (nil) whether node n's metadata shows topic with its partitions, each with a
// leader.
func (n *KafkaNode) topicLed(ctx context.Context, topic string, partitions int) error {
	md, err := n.metadata(ctx, topic)
	if err != nil {
		return err
	}
	for _, t := range md.Topics {
		if t.Name != topic {
			continue
		}
		if t.Error != nil {
			return fmt.Errorf("node %d: %w", n.ID, t.Error)
		}
		if len(t.Partitions) != partitions {
			return fmt.Errorf("node %d knows %d partitions of %d", n.ID, len(t.Partitions), partitions)
		}
		for _, p := range t.Partitions {
			if p.Leader.ID == 0 || p.Error != nil {
				return fmt.Errorf("node %d: partition %d has no leader (%v)", n.ID, p.ID, p.Error)
			}
		}
		return nil
	}
	return fmt.Errorf("node %d does not know the topic", n.ID)
}

// Partitions is the metadata of topic's partitions: leader, replicas and in-sync replicas,
// as the cluster sees them now. A replica on a broker that is down has broker id 0 (ids
// start at 1); so does the leader of a partition that has none.
func (k *Kafka) Partitions(ctx context.Context, topic string) ([]kafka.Partition, error) {
	md, err := k.Metadata(ctx, topic)
	if err != nil {
		return nil, err
	}
	for _, t := range md.Topics {
		if t.Name != topic {
			continue
		}
		if t.Error != nil {
			return nil, fmt.Errorf("topic %s: %w", topic, t.Error)
		}
		return t.Partitions, nil
	}
	return nil, fmt.Errorf("topic %s: not in the metadata", topic)
}

// Leader is the node leading partition of topic now, the one a fault test kills to force a
// leader change.
func (k *Kafka) Leader(ctx context.Context, topic string, partition int) (*KafkaNode, error) {
	parts, err := k.Partitions(ctx, topic)
	if err != nil {
		return nil, err
	}
	for _, p := range parts {
		if p.ID != partition {
			continue
		}
		if n := k.Node(p.Leader.ID); n != nil {
			return n, nil
		}
		return nil, fmt.Errorf("topic %s partition %d has no leader", topic, partition)
	}
	return nil, fmt.Errorf("topic %s has no partition %d", topic, partition)
}

// WaitNewLeader waits until partition of topic is led by a running node other than old (nil:
// any running node), and returns it: after old was killed, the moment the controller fenced it
// (broker.session.timeout.ms, 3 s here) and elected another in-sync replica.
func (k *Kafka) WaitNewLeader(ctx context.Context, topic string, partition int, old *KafkaNode, within time.Duration) (*KafkaNode, error) {
	deadline := time.Now().Add(within)
	for {
		n, err := k.Leader(ctx, topic, partition)
		if err == nil && n != old && n.Running() {
			return n, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("topic %s partition %d: no new leader after %s (%v)", topic, partition, within, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// WaitInSync waits until every partition of topic has a leader and all its replicas in sync:
// after a node came back, the moment the cluster again tolerates losing one.
func (k *Kafka) WaitInSync(ctx context.Context, topic string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		parts, err := k.Partitions(ctx, topic)
		lagging := 0
		if err == nil {
			for _, p := range parts {
				if p.Leader.ID == 0 || len(p.Isr) < len(p.Replicas) {
					lagging++
				}
			}
			if lagging == 0 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topic %s: %d partitions not fully in sync after %s (%v)", topic, lagging, within, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TopicLogBytes is the size of topic's log segments on disk, summed over every replica of
// every partition: what the events cost in Kafka's storage, record batch headers and
// compression included.
func (k *Kafka) TopicLogBytes(topic string) (int64, error) {
	var total int64
	for _, n := range k.Nodes {
		dirs, err := filepath.Glob(filepath.Join(n.Dir, "data", topic+"-*"))
		if err != nil {
			return 0, err
		}
		for _, d := range dirs {
			logs, err := filepath.Glob(filepath.Join(d, "*.log"))
			if err != nil {
				return 0, err
			}
			for _, l := range logs {
				fi, err := os.Stat(l)
				if err != nil {
					return 0, fmt.Errorf("topic %s: %w", topic, err)
				}
				total += fi.Size()
			}
		}
	}
	return total, nil
}

// offsetsPartitions is the partition count of the consumer offsets topic
// (offsets.topic.num.partitions in serverProperties).
const offsetsPartitions = 4

// WaitGroupCoordinator has the cluster create its consumer offsets topic, which Kafka does on
// the first request for a group coordinator, and waits until every partition of it has a
// leader, so the first consumer group joins at once: until then a join fails with
// COORDINATOR_NOT_AVAILABLE and kafka-go waits JoinGroupBackoff (5 s by default) before trying
// again.
func (k *Kafka) WaitGroupCoordinator(ctx context.Context, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		err := k.findCoordinator(ctx)
		if err == nil {
			return k.waitTopic(ctx, "__consumer_offsets", offsetsPartitions, time.Until(deadline))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kafka %s: no group coordinator after %s: %w", k.Version, within, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// findCoordinator asks a running node for the coordinator of a group.
func (k *Kafka) findCoordinator(ctx context.Context) error {
	running := k.Running()
	if len(running) == 0 {
		return errors.New("no node is running")
	}
	tr := &kafka.Transport{DialTimeout: 2 * time.Second}
	defer tr.CloseIdleConnections()
	cl := &kafka.Client{Addr: kafka.TCP(running[0].Addr), Timeout: 5 * time.Second, Transport: tr}
	res, err := cl.FindCoordinator(ctx, &kafka.FindCoordinatorRequest{Key: "acv-localenv", KeyType: kafka.CoordinatorKeyTypeConsumer})
	if err != nil {
		return err
	}
	return res.Error
}
