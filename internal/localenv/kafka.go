package localenv

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// KafkaOptions shape an Apache Kafka cluster.
type KafkaOptions struct {
	// Version is the release to run, Kafka3 or Kafka4 (or another of those lines). Default
	// Kafka4.
	Version string
	// Nodes is how many nodes the cluster has, each a combined broker and KRaft controller
	// (process.roles=broker,controller) in a JVM of its own. 1 (the default) for the suites; 3
	// for fault tests: a quorum that survives one node's loss, topics with replication factor 3
	// and min.insync.replicas=2, so acks=all still succeeds with one broker down.
	Nodes int
	// HeapMB is each JVM's maximum heap. Default 384.
	HeapMB int
	// Dist is the jars to run; nil fetches Version's with FetchKafka into JarCache.
	Dist *KafkaDist
	// JarCache is where fetched jars are kept (ACV_KAFKA_CACHE); empty: acv in the user's
	// cache directory.
	JarCache string
	// JavaHome is the JDK whose bin/java runs the nodes (JAVA_HOME); empty: the java of the
	// PATH.
	JavaHome string
	// JVMOptions are added after the default JVM options, so they override them: e.g.
	// -XX:TieredStopAtLevel=4 for the full JIT where the broker's throughput matters more than
	// its start.
	JVMOptions []string
}

func (o KafkaOptions) withDefaults() KafkaOptions {
	if o.Version == "" {
		o.Version = Kafka4
	}
	if o.Nodes <= 0 {
		o.Nodes = 1
	}
	if o.HeapMB <= 0 {
		o.HeapMB = 384
	}
	return o
}

// Kafka is a running Apache Kafka cluster in KRaft mode on loopback, its state in a directory
// of the caller's. Nodes may be killed, stopped and started again one by one (KafkaNode) or
// all at once (Stop, Start), on the same ports and data, as a fault test needs; Close tears
// everything down and removes the state.
//
// A fault test on three nodes goes like this:
//
//	k, err := localenv.StartKafka(ctx, dir, localenv.KafkaOptions{Version: localenv.Kafka4, Nodes: 3})
//	defer k.Close()
//	err = k.CreateTopic(ctx, topic, 8, 0)        // replication factor 3, min.insync.replicas 2
//	err = k.WaitGroupCoordinator(ctx, time.Minute) // optional: consumer groups join at once
//	// ... run the service with KAFKA_BROKERS=strings.Join(k.Brokers, ",") ...
//	leader, err := k.Leader(ctx, topic, 0)
//	leader.Kill()                  // SIGKILL, as a crash
//	next, err := k.WaitNewLeader(ctx, topic, 0, leader, time.Minute) // ~3 s: broker.session.timeout.ms
//	err = leader.Start(ctx)        // same ports and data; returns once it is registered again
//	err = k.WaitInSync(ctx, topic, time.Minute)
//	k.Stop()                       // the whole cluster down (SIGTERM, in parallel)
//	err = k.Start(ctx)             // and back
//
// Every node logs to its LogFile (appended across restarts); LogLines searches them all, and a
// start that fails returns the tail of each.
type Kafka struct {
	// Version is the Apache Kafka release the nodes run.
	Version string
	// Brokers are the nodes' client addresses ("127.0.0.1:port"), in node order: what
	// KAFKA_BROKERS would name.
	Brokers []string
	// Nodes are the cluster's nodes; node ids are 1..len(Nodes), Nodes[i] has id i+1.
	Nodes []*KafkaNode
	// Dir holds a directory per node (node-1, ...) with its server.properties, its data and its
	// log, server.log.
	Dir string
	// Dist is the jars it runs; Dist.Fetched says how long fetching them took, zero when cached.
	Dist *KafkaDist
	// Formatted is how long formatting the nodes' storage with Kafka's own tool took;
	// Started, how long the JVMs took from launch until every node answered a metadata request
	// listing all of them: the broker start time the suites report.
	Formatted, Started time.Duration

	opts      KafkaOptions
	clusterID string
	closeOnce sync.Once
}

// StartKafka starts a Kafka cluster with its state in dir (created; removed by Close): it
// fetches the jars when needed, picks free loopback ports, formats each node's storage afresh
// (a new cluster id; dir holds no earlier cluster) with kafka.tools.StorageTool and starts the
// nodes, and returns once every node answers metadata requests and lists every other. On failure nothing is left running and the error carries the
// tail of the failing node's log. Topics are never created implicitly
// (auto.create.topics.enable=false): use CreateTopic.
func StartKafka(ctx context.Context, dir string, o KafkaOptions) (*Kafka, error) {
	o = o.withDefaults()
	if _, err := javaBinary(o.JavaHome); err != nil {
		return nil, err
	}
	dist := o.Dist
	if dist == nil {
		var err error
		if dist, err = FetchKafka(ctx, o.Version, o.JarCache); err != nil {
			return nil, err
		}
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	id, err := newClusterID()
	if err != nil {
		return nil, err
	}
	k := &Kafka{Version: o.Version, Dir: dir, Dist: dist, opts: o, clusterID: id}
	voters := make([]string, o.Nodes)
	for i := range o.Nodes {
		n := &KafkaNode{ID: i + 1, Dir: filepath.Join(dir, fmt.Sprintf("node-%d", i+1)), k: k}
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		cport, err := FreePort()
		if err != nil {
			return nil, err
		}
		n.Addr = fmt.Sprintf("127.0.0.1:%d", port)
		n.ControllerAddr = fmt.Sprintf("127.0.0.1:%d", cport)
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
	if err := k.each(func(n *KafkaNode) error { return n.launch() }); err != nil {
		k.Close()
		return nil, err
	}
	if err := k.WaitReady(ctx, kafkaStartWithin); err != nil {
		k.Close()
		return nil, err
	}
	k.Started = time.Since(start)
	return k, nil
}

// kafkaStartWithin bounds how long the nodes may take to answer after their JVMs started: the
// JVM and the quorum's first election take seconds, more on a loaded machine.
const kafkaStartWithin = 2 * time.Minute

// newClusterID is a random Kafka cluster id: 16 bytes, URL-safe base64 without padding, not
// starting with '-' (which the tools would read as a flag), as Kafka's Uuid.randomUuid makes.
func newClusterID() (string, error) {
	for {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return "", fmt.Errorf("cluster id: %w", err)
		}
		if s := base64.RawURLEncoding.EncodeToString(b); s[0] != '-' {
			return s, nil
		}
	}
}

// each runs fn on every node at once and joins their errors: nodes are formatted, started and
// stopped in parallel, as the JVMs' start-up dominates.
func (k *Kafka) each(fn func(n *KafkaNode) error) error {
	errs := make([]error, len(k.Nodes))
	var wg sync.WaitGroup
	for i, n := range k.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(n)
		}()
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

// Stop stops every node at once (SIGTERM, a controlled shutdown, SIGKILL after a grace
// period): the whole cluster down, its data kept, until Start.
func (k *Kafka) Stop() {
	_ = k.each(func(n *KafkaNode) error {
		n.Stop()
		return nil
	})
}

// Start starts every node that is not running, on its ports and data, and waits until the
// cluster answers with all nodes: the way back from Stop, or from killing several nodes.
func (k *Kafka) Start(ctx context.Context) error {
	if err := k.each(func(n *KafkaNode) error {
		if n.Running() {
			return nil
		}
		return n.launch()
	}); err != nil {
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
		_ = k.each(func(n *KafkaNode) error {
			n.Kill()
			n.mu.Lock()
			if n.log != nil {
				n.log.Close()
			}
			n.mu.Unlock()
			return nil
		})
		os.RemoveAll(k.Dir)
	})
}

// LogLines are the lines of every node's log that contain substr, each prefixed with its node
// id: what a test asserts the brokers did or never did (e.g. reject a request's version).
func (k *Kafka) LogLines(substr string) []string {
	var out []string
	for _, n := range k.Nodes {
		b, err := os.ReadFile(n.LogFile)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, substr) {
				out = append(out, fmt.Sprintf("node %d: %s", n.ID, l))
			}
		}
	}
	return out
}

// logTails is the end of every node's log, for an error message.
func (k *Kafka) logTails() string {
	var b strings.Builder
	for _, n := range k.Nodes {
		fmt.Fprintf(&b, "\n--- node %d (%s), last lines of %s:\n%s", n.ID, n.Addr, n.LogFile, n.LogTail(30))
	}
	return b.String()
}
