package localenv

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/acv/acv/internal/settings"
)

// KafkaOptions shape an Apache Kafka cluster.
type KafkaOptions struct {
	// Version is the release to run, Kafka3 or Kafka4 (or another of those lines). Default
	// Kafka4.
	Version string
	// Nodes is how many nodes the cluster has, each broker and KRaft controller in a JVM of its
	// own: 1 (the default) for the suites; 3 for fault tests, a quorum that survives one node's
	// loss, with replication factor 3 and min.insync.replicas=2.
	Nodes int
	// HeapMB is each JVM's maximum heap. Default 384.
	HeapMB int
	// JVMOptions come after the default JVM options, so they override them (e.g.
	// -XX:TieredStopAtLevel=4 for the full JIT).
	JVMOptions []string
}

// Kafka is a running Apache Kafka cluster in KRaft mode on loopback. Nodes may be killed,
// stopped and started again one by one (KafkaNode) or all at once (Stop, Start), on the same
// ports and data; Close tears everything down and removes the state.
type Kafka struct {
	// Version is the Apache Kafka release the nodes run.
	Version string
	// Brokers are the nodes' client addresses ("127.0.0.1:port"), in node order.
	Brokers []string
	// Nodes are the cluster's nodes; Nodes[i] has node id i+1.
	Nodes []*KafkaNode
	// Dir holds a directory per node (node-1, ...).
	Dir string
	// Dist is the jars it runs.
	Dist *KafkaDist
	// Formatted is how long formatting the nodes' storage took; Started, how long the JVMs
	// took from launch until every node answered listing all of them.
	Formatted, Started time.Duration

	opts      KafkaOptions
	java      string
	clusterID string
	closeOnce sync.Once
}

// kafkaStartWithin bounds how long the nodes may take to answer after their JVMs started.
const kafkaStartWithin = 2 * time.Minute

// StartKafka starts a Kafka cluster afresh in dir (a dead run's JVMs there killed, removed by
// Close) and returns once every node lists every other and a consumer group joins at once. On
// failure nothing is left running and the error carries the nodes' log tails. Topics are never
// created implicitly: use CreateTopic.
func StartKafka(ctx context.Context, dir string, o KafkaOptions) (*Kafka, error) {
	o.Version = cmp.Or(o.Version, Kafka4)
	o.Nodes = cmp.Or(max(o.Nodes, 0), 1)
	o.HeapMB = cmp.Or(max(o.HeapMB, 0), 384)
	// The JDK of $JAVA_HOME, else the PATH's java; the jars cached in $ACV_KAFKA_CACHE, else acv
	// in the user's cache directory.
	java, err := javaBinary(settings.Get("JAVA_HOME"))
	if err != nil {
		return nil, err
	}
	dist, err := FetchKafka(ctx, o.Version, settings.Get("ACV_KAFKA_CACHE"))
	if err != nil {
		return nil, err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	pids, _ := filepath.Glob(filepath.Join(dir, "node-*", "kafka.pid"))
	for _, f := range pids {
		if err := stopStale(f, "java", syscall.SIGKILL, 10*time.Second); err != nil {
			return nil, err
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	// A cluster id as Kafka's Uuid.randomUuid makes it, not starting with '-' (a flag).
	b := make([]byte, 16)
	id := "-"
	for id[0] == '-' {
		_, _ = rand.Read(b)
		id = base64.RawURLEncoding.EncodeToString(b)
	}
	k := &Kafka{Version: o.Version, Dir: dir, Dist: dist, opts: o, java: java, clusterID: id}
	voters := make([]string, o.Nodes)
	for i := range o.Nodes {
		n := &KafkaNode{ID: i + 1, Dir: filepath.Join(dir, fmt.Sprintf("node-%d", i+1)), k: k}
		for _, addr := range []*string{&n.Addr, &n.ControllerAddr} {
			if *addr, err = FreeAddr(); err != nil {
				return nil, err
			}
		}
		n.LogFile = filepath.Join(n.Dir, "server.log")
		voters[i] = fmt.Sprintf("%d@%s", n.ID, n.ControllerAddr)
		k.Nodes = append(k.Nodes, n)
		k.Brokers = append(k.Brokers, n.Addr)
	}
	for _, n := range k.Nodes {
		if err := n.writeConfig(strings.Join(voters, ",")); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	if err := k.each(func(n *KafkaNode) error { return n.format(ctx) }); err != nil {
		return nil, err
	}
	k.Formatted = time.Since(start)
	start = time.Now()
	if err = k.Start(ctx); err == nil {
		err = k.waitGroupCoordinator(ctx, time.Minute)
	}
	if err != nil {
		k.Close()
		return nil, err
	}
	k.Started = time.Since(start)
	return k, nil
}

// each runs fn on every node at once and joins their errors: the JVMs' start-up dominates.
func (k *Kafka) each(fn func(n *KafkaNode) error) error {
	errs := make([]error, len(k.Nodes))
	var wg sync.WaitGroup
	for i, n := range k.Nodes {
		wg.Go(func() { errs[i] = fn(n) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Node is the node with id (1-based), or nil.
func (k *Kafka) Node(id int) *KafkaNode {
	if id < 1 || id > len(k.Nodes) {
		return nil
	}
	return k.Nodes[id-1]
}

// Running are the nodes whose JVM runs now.
func (k *Kafka) Running() []*KafkaNode {
	var out []*KafkaNode
	for _, n := range k.Nodes {
		if n.Running() {
			out = append(out, n)
		}
	}
	return out
}

// Stop stops every node at once (a controlled shutdown, SIGKILL after a grace period): the
// whole cluster down, its data kept, until Start.
func (k *Kafka) Stop() {
	_ = k.each(func(n *KafkaNode) error { n.Stop(); return nil })
}

// Start starts every node that is not running, on its ports and data, and waits until the
// cluster answers with all nodes: the way back from Stop, or from killing several nodes.
func (k *Kafka) Start(ctx context.Context) error {
	if err := k.each((*KafkaNode).launch); err != nil {
		return err
	}
	return k.WaitReady(ctx, kafkaStartWithin)
}

// Close kills every node and removes Dir. It is safe to call more than once and on a cluster
// that failed to start.
func (k *Kafka) Close() {
	if k == nil {
		return
	}
	k.closeOnce.Do(func() {
		_ = k.each(func(n *KafkaNode) error { n.Kill(); return nil })
		os.RemoveAll(k.Dir)
	})
}

// LogLines are the lines of every node's log that contain substr, each prefixed with its node
// id: what a test asserts the brokers did or never did (e.g. reject a request's version).
func (k *Kafka) LogLines(substr string) []string {
	var out []string
	for _, n := range k.Nodes {
		b, _ := os.ReadFile(n.LogFile)
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, substr) {
				out = append(out, fmt.Sprintf("node %d: %s", n.ID, l))
			}
		}
	}
	return out
}

func (k *Kafka) logTails() string {
	var b strings.Builder
	for _, n := range k.Nodes {
		fmt.Fprintf(&b, "\n--- node %d (%s), last lines of %s:\n%s", n.ID, n.Addr, n.LogFile, TailFile(n.LogFile, 30))
	}
	return b.String()
}

// client is a kafka-go client of addr on a transport of its own: a transport answers metadata
// requests from what it learnt when it connected, so only a new one gives today's answer.
func client(addr string, timeout time.Duration) (*kafka.Client, func()) {
	tr := &kafka.Transport{DialTimeout: 2 * time.Second}
	return &kafka.Client{Addr: kafka.TCP(addr), Timeout: timeout, Transport: tr}, tr.CloseIdleConnections
}

func (n *KafkaNode) metadata(ctx context.Context, topics ...string) (*kafka.MetadataResponse, error) {
	cl, done := client(n.Addr, 5*time.Second)
	defer done()
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: append([]string{}, topics...)})
	if err != nil {
		return nil, fmt.Errorf("kafka node %d metadata: %w", n.ID, err)
	}
	return md, nil
}

// Metadata asks the first running node that answers for the cluster's metadata of topics.
func (k *Kafka) Metadata(ctx context.Context, topics ...string) (*kafka.MetadataResponse, error) {
	errs := []error{errors.New("kafka: no node answers")}
	for _, n := range k.Running() {
		md, err := n.metadata(ctx, topics...)
		if err == nil {
			return md, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// poll is Poll bounded by ctx too, with errors naming the cluster.
func (k *Kafka) poll(ctx context.Context, what string, within, every time.Duration, check func() error) error {
	if err := Poll(ctx, within, every, check); err != nil {
		return fmt.Errorf("kafka %s: %s after %s: %w", k.Version, what, within, err)
	}
	return nil
}

// WaitReady waits until every running node answers a metadata request listing every running
// node as a broker (a restarted one once the controller unfenced it).
func (k *Kafka) WaitReady(ctx context.Context, within time.Duration) error {
	err := k.poll(ctx, "not ready", within, 100*time.Millisecond, func() error {
		running := k.Running()
		for _, n := range k.Nodes {
			if n.failed() {
				return giveUp{fmt.Errorf("node %d exited while starting", n.ID)}
			}
		}
		if len(running) == 0 {
			return giveUp{errors.New("no node is running")}
		}
		for _, n := range running {
			md, err := n.metadata(ctx)
			if err != nil {
				return err
			}
			if len(md.Brokers) < len(running) {
				return fmt.Errorf("node %d lists %d brokers of %d running", n.ID, len(md.Brokers), len(running))
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w%s", err, k.logTails())
	}
	return nil
}

// CreateTopic creates topic with the given partitions and replication factor (0: three, or the
// number of nodes when fewer), and waits until every node knows every partition's leader.
func (k *Kafka) CreateTopic(ctx context.Context, topic string, partitions, replicationFactor int) error {
	if replicationFactor <= 0 {
		replicationFactor = min(3, len(k.Nodes))
	}
	running := k.Running()
	if len(running) == 0 {
		return fmt.Errorf("create topic %s: no kafka node is running", topic)
	}
	cl, done := client(running[0].Addr, 30*time.Second)
	defer done()
	res, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic: topic, NumPartitions: partitions, ReplicationFactor: replicationFactor,
	}}})
	if err == nil {
		err = res.Errors[topic]
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return k.waitTopic(ctx, topic, partitions, 30*time.Second)
}

// waitTopic waits until every running node knows a leader of every partition of topic: a
// client bootstrapping from a node that does not is told the topic does not exist.
func (k *Kafka) waitTopic(ctx context.Context, topic string, partitions int, within time.Duration) error {
	return k.poll(ctx, "topic "+topic+" not ready", within, 50*time.Millisecond, func() error {
		for _, n := range k.Running() {
			md, err := n.metadata(ctx, topic)
			if err != nil {
				return err
			}
			parts, err := partitionsOf(md, topic)
			if err == nil && len(parts) != partitions {
				err = fmt.Errorf("%d partitions of %d", len(parts), partitions)
			}
			for _, p := range parts {
				if err == nil && (p.Leader.ID == 0 || p.Error != nil) {
					err = fmt.Errorf("partition %d has no leader (%v)", p.ID, p.Error)
				}
			}
			if err != nil {
				return fmt.Errorf("node %d: %w", n.ID, err)
			}
		}
		return nil
	})
}

func partitionsOf(md *kafka.MetadataResponse, topic string) ([]kafka.Partition, error) {
	for _, t := range md.Topics {
		if t.Name == topic {
			return t.Partitions, t.Error
		}
	}
	return nil, fmt.Errorf("topic %s: not in the metadata", topic)
}

// Partitions is the metadata of topic's partitions as the cluster sees them now. A replica on
// a broker that is down has broker id 0 (ids start at 1); so does a missing leader.
func (k *Kafka) Partitions(ctx context.Context, topic string) ([]kafka.Partition, error) {
	md, err := k.Metadata(ctx, topic)
	if err != nil {
		return nil, err
	}
	return partitionsOf(md, topic)
}

// Leader is the node leading partition of topic now, the one a fault test kills to force a
// leader change.
func (k *Kafka) Leader(ctx context.Context, topic string, partition int) (*KafkaNode, error) {
	parts, err := k.Partitions(ctx, topic)
	if err != nil {
		return nil, err
	}
	for _, p := range parts {
		if p.ID == partition {
			if n := k.Node(p.Leader.ID); n != nil {
				return n, nil
			}
			return nil, fmt.Errorf("topic %s partition %d has no leader", topic, partition)
		}
	}
	return nil, fmt.Errorf("topic %s has no partition %d", topic, partition)
}

// WaitNewLeader waits until partition of topic is led by a running node other than old (nil:
// any), and returns it: after old was killed, once the controller fenced it.
func (k *Kafka) WaitNewLeader(ctx context.Context, topic string, partition int, old *KafkaNode, within time.Duration) (*KafkaNode, error) {
	var n *KafkaNode
	err := k.poll(ctx, fmt.Sprintf("no new leader of %s/%d", topic, partition), within, 50*time.Millisecond, func() (err error) {
		n, err = k.Leader(ctx, topic, partition)
		if err == nil && (n == old || !n.Running()) {
			err = fmt.Errorf("led by node %d", n.ID)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return n, nil
}

// WaitInSync waits until every partition of topic has a leader and all its replicas in sync:
// after a node came back, the moment the cluster again tolerates losing one.
func (k *Kafka) WaitInSync(ctx context.Context, topic string, within time.Duration) error {
	return k.poll(ctx, topic+" not in sync", within, 100*time.Millisecond, func() error {
		parts, err := k.Partitions(ctx, topic)
		for _, p := range parts {
			if err == nil && (p.Leader.ID == 0 || len(p.Isr) < len(p.Replicas)) {
				err = fmt.Errorf("partition %d: %d of %d replicas in sync", p.ID, len(p.Isr), len(p.Replicas))
			}
		}
		return err
	})
}

// TopicLogBytes is the size of topic's log segments on disk over every replica of every
// partition: what the events cost in Kafka's storage, batch headers and compression included.
func (k *Kafka) TopicLogBytes(topic string) (int64, error) {
	var total int64
	for _, n := range k.Nodes {
		logs, err := filepath.Glob(filepath.Join(n.Dir, "data", topic+"-*", "*.log"))
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
	return total, nil
}

// waitGroupCoordinator has the cluster create its consumer offsets topic and waits until each
// of its partitions has a leader, so the first consumer group joins at once rather than after
// COORDINATOR_NOT_AVAILABLE and kafka-go's JoinGroupBackoff.
func (k *Kafka) waitGroupCoordinator(ctx context.Context, within time.Duration) error {
	deadline := time.Now().Add(within)
	err := k.poll(ctx, "no group coordinator", within, 100*time.Millisecond, func() error {
		running := k.Running()
		if len(running) == 0 {
			return errors.New("no node is running")
		}
		cl, done := client(running[0].Addr, 5*time.Second)
		defer done()
		res, err := cl.FindCoordinator(ctx, &kafka.FindCoordinatorRequest{Key: "acv-localenv", KeyType: kafka.CoordinatorKeyTypeConsumer})
		if err != nil {
			return err
		}
		return res.Error
	})
	if err != nil {
		return err
	}
	return k.waitTopic(ctx, "__consumer_offsets", offsetsPartitions, time.Until(deadline))
}
