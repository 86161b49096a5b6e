package localenv

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/acv/acv/internal/settings"
)

// KafkaOptions shape an Apache Kafka cluster.
type KafkaOptions struct {
	// Version is the release to run, Kafka3 or Kafka4 (or another of those lines). Default Kafka4.
	Version string
	// Nodes is how many nodes (broker and KRaft controller, a JVM each): 1 by default; 3 for
	// fault tests, with replication factor 3 and min.insync.replicas=2.
	Nodes int
	// HeapMB is each JVM's maximum heap. Default 384.
	HeapMB int
	// JVMOptions come after the default JVM options, so they override them.
	JVMOptions []string
}

// Kafka is a running Apache Kafka cluster in KRaft mode on loopback. Nodes may be killed,
// stopped and started again one by one or all at once, on the same ports and data.
type Kafka struct {
	Version string
	// Brokers are the nodes' client addresses ("127.0.0.1:port"), in node order.
	Brokers []string
	// Nodes are the cluster's nodes; Nodes[i] has node id i+1.
	Nodes []*KafkaNode
	// Dir holds a directory per node (node-1, ...).
	Dir  string
	Dist *KafkaDist
	// Formatted is how long formatting the storage took; Started, how long the JVMs took from
	// launch until every node answered listing all of them.
	Formatted, Started time.Duration

	opts      KafkaOptions
	java      string
	clusterID string
	closeOnce sync.Once
}

// KafkaNode is one node of a Kafka cluster: a JVM running broker and controller, that a fault
// test may kill, stop and start again on the same ports and data.
type KafkaNode struct {
	// ID is the node id (node.id), 1-based.
	ID int
	// Addr is the client listener ("127.0.0.1:port"); ControllerAddr the KRaft controller's.
	Addr, ControllerAddr string
	// Dir holds server.properties, the data (data/) and LogFile, appended to across restarts.
	Dir, LogFile string

	k    *Kafka
	mu   sync.Mutex
	proc *Process
	// stopped says the process was killed or stopped on purpose: its exit is no failed start.
	stopped bool
}

// kafkaStartWithin bounds how long the nodes may take to answer after their JVMs started.
const kafkaStartWithin = 2 * time.Minute

// offsetsPartitions is the partition count of the consumer offsets topic.
const offsetsPartitions = 4

// StartKafka starts a Kafka cluster afresh in dir (a dead run's JVMs there killed, removed by
// Close) and returns once every node lists every other and a consumer group joins at once. On
// failure nothing is left running and the error carries the nodes' log tails. Topics are never
// created implicitly: use CreateTopic.
func StartKafka(ctx context.Context, dir string, o KafkaOptions) (*Kafka, error) {
	o.Version = cmp.Or(o.Version, Kafka4)
	o.Nodes = cmp.Or(max(o.Nodes, 0), 1)
	o.HeapMB = cmp.Or(max(o.HeapMB, 0), 384)
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
	// A cluster id as Kafka's Uuid.randomUuid makes it; its first character a letter, not '-'
	// (which reads as a flag).
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[0] &= 0x7f
	k := &Kafka{Version: o.Version, Dir: dir, Dist: dist, opts: o, java: java, clusterID: base64.RawURLEncoding.EncodeToString(b)}
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

// javaBinary finds java: home's bin/java (a JDK's directory, JAVA_HOME), else the PATH's.
func javaBinary(home string) (string, error) {
	if home != "" {
		if p, err := exec.LookPath(filepath.Join(home, "bin", "java")); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("java not installed (apt-get install default-jdk-headless): %w", err)
	}
	return p, nil
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

// Stop stops every node at once (a controlled shutdown, SIGKILL after a grace period), its
// data kept, until Start.
func (k *Kafka) Stop() {
	_ = k.each(func(n *KafkaNode) error { n.Stop(); return nil })
}

// Start starts every node that is not running, on its ports and data, and waits until the
// cluster answers with all nodes.
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
// id: what a test asserts the brokers did or never did.
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

// poll is Poll with errors naming the cluster.
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
		for _, n := range k.Nodes {
			err = fmt.Errorf("%w\n--- node %d (%s), last lines of %s:\n%s", err, n.ID, n.Addr, n.LogFile, TailFile(n.LogFile, 30))
		}
	}
	return err
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

// Partitions is the metadata of topic's partitions as the first running node that answers
// sees them now. A replica on a broker that is down has broker id 0 (ids start at 1); so does
// a missing leader.
func (k *Kafka) Partitions(ctx context.Context, topic string) ([]kafka.Partition, error) {
	errs := []error{errors.New("kafka: no node answers")}
	for _, n := range k.Running() {
		md, err := n.metadata(ctx, topic)
		if err == nil {
			return partitionsOf(md, topic)
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
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
		logs, _ := filepath.Glob(filepath.Join(n.Dir, "data", topic+"-*", "*.log"))
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
		cl, done := client(k.Brokers[0], 5*time.Second)
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

// serverProperties is the node's configuration: loopback only, topics created explicitly, with
// three nodes replication factor 3 and two in-sync replicas as production; small for a small
// machine, and a dead broker fenced after 3 s so leadership moves quickly.
func (n *KafkaNode) serverProperties(voters string) string {
	rf := min(3, len(n.k.Nodes))
	isr := min(2, rf)
	props := fmt.Sprintf(`process.roles=broker,controller
node.id=%d
controller.quorum.voters=%s
listeners=PLAINTEXT://%s,CONTROLLER://%s
advertised.listeners=PLAINTEXT://%[3]s
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs=%[5]s
auto.create.topics.enable=false
delete.topic.enable=true
unclean.leader.election.enable=false
num.partitions=1
default.replication.factor=%[6]d
min.insync.replicas=%[7]d
offsets.topic.replication.factor=%[6]d
offsets.topic.num.partitions=%[8]d
transaction.state.log.replication.factor=%[6]d
transaction.state.log.min.isr=%[7]d
transaction.state.log.num.partitions=4
group.initial.rebalance.delay.ms=0
group.min.session.timeout.ms=1000
log.segment.bytes=1048576
num.network.threads=2
num.io.threads=4
background.threads=4
num.recovery.threads.per.data.dir=1
num.replica.fetchers=1
log.cleaner.threads=1
log.cleaner.dedupe.buffer.size=8388608
broker.heartbeat.interval.ms=500
broker.session.timeout.ms=3000
replica.lag.time.max.ms=10000
`, n.ID, voters, n.Addr, n.ControllerAddr, filepath.Join(n.Dir, "data"), rf, isr, offsetsPartitions)
	if major(n.k.Version) != "3" {
		// Internal topics of 4.x (share groups), created only when used.
		props += fmt.Sprintf("share.coordinator.state.topic.replication.factor=%d\nshare.coordinator.state.topic.min.isr=%d\n", rf, isr)
	}
	return props
}

// log4jConfigs are, per major version, the node's logging configuration file, the JVM option
// naming it and its content: everything to the console, the node's log file.
var log4jConfigs = map[string][3]string{
	"3": {"log4j.properties", "-Dlog4j.configuration=file:", `log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
`},
	"4": {"log4j2.properties", "-Dlog4j2.configurationFile=", `status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.out.ref = out
logger.request.name = kafka.request.logger
logger.request.level = warn
logger.state.name = state.change.logger
logger.state.level = warn
`},
}

func (n *KafkaNode) writeConfig(voters string) error {
	if err := os.MkdirAll(filepath.Join(n.Dir, "data"), 0o755); err != nil {
		return fmt.Errorf("kafka node %d: %w", n.ID, err)
	}
	log4j := log4jConfigs[major(n.k.Version)]
	for name, content := range map[string]string{"server.properties": n.serverProperties(voters), log4j[0]: log4j[2]} {
		if err := os.WriteFile(filepath.Join(n.Dir, name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("kafka node %d: %w", n.ID, err)
		}
	}
	return nil
}

// java runs a JVM with the node's java arguments before the main class: a small heap, the
// serial collector and the client compiler, which start fastest, the logging configuration,
// then JVMOptions.
func (n *KafkaNode) java(ctx context.Context, heapMB int, args ...string) *exec.Cmd {
	log4j := log4jConfigs[major(n.k.Version)]
	jvm := []string{
		fmt.Sprintf("-Xmx%dm", heapMB), fmt.Sprintf("-Xms%dm", min(heapMB, 64)),
		"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
		"-Djava.awt.headless=true", "-Djava.net.preferIPv4Stack=true",
		"-Dkafka.logs.dir=" + n.Dir, log4j[1] + filepath.Join(n.Dir, log4j[0]),
	}
	jvm = append(append(jvm, n.k.opts.JVMOptions...), "-cp", filepath.Join(n.k.Dist.Libs, "*"))
	return exec.CommandContext(ctx, n.k.java, append(jvm, args...)...)
}

// format formats the node's storage with the release's own tool for the cluster's id and its
// static quorum: the same command on 3.x and 4.x.
func (n *KafkaNode) format(ctx context.Context) error {
	cmd := n.java(ctx, 128, "kafka.tools.StorageTool", "format",
		"--config", filepath.Join(n.Dir, "server.properties"), "--cluster-id", n.k.clusterID)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("format kafka node %d storage: %w: %s", n.ID, err, lastChars(string(out), 4000))
	}
	return nil
}

// launch starts the node's JVM, unless it runs, without waiting for it to answer; its pid goes
// to kafka.pid, for StartKafka of a later run to kill should this one die.
func (n *KafkaNode) launch() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc != nil && !n.proc.Exited() {
		return nil
	}
	cmd := n.java(context.Background(), n.k.opts.HeapMB, "kafka.Kafka", filepath.Join(n.Dir, "server.properties"))
	cmd.Dir = n.Dir
	p, err := Launch(fmt.Sprintf("kafka %s node %d", n.k.Version, n.ID), cmd, n.LogFile)
	if err != nil {
		return err
	}
	n.proc, n.stopped = p, false
	return os.WriteFile(filepath.Join(n.Dir, "kafka.pid"), []byte(strconv.Itoa(p.Pid())+"\n"), 0o644)
}

// Start starts the node again after Kill or Stop, on the same ports and data, and waits until
// the cluster answers with every running node; a running node is left alone.
func (n *KafkaNode) Start(ctx context.Context) error {
	if err := n.launch(); err != nil {
		return err
	}
	return n.k.WaitReady(ctx, kafkaStartWithin)
}

// Kill ends the node's JVM with SIGKILL, as a crash or an OOM kill would: no controlled
// shutdown, no flush. It returns once the process is gone.
func (n *KafkaNode) Kill() { n.halt().Kill() }

// Stop shuts the node down cleanly (SIGTERM: leadership moves away first), and kills it after
// 30 s, which it may need as the last node of a quorum that cannot elect a controller.
func (n *KafkaNode) Stop() { n.halt().Stop(30 * time.Second) }

// halt marks the node stopped on purpose and returns its process.
func (n *KafkaNode) halt() *Process {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.stopped = true
	return n.proc
}

// failed tells whether the node's process exited without being stopped on purpose.
func (n *KafkaNode) failed() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc != nil && !n.stopped && n.proc.Exited()
}

// Running tells whether the node's JVM runs (it may not answer yet).
func (n *KafkaNode) Running() bool { return n.Pid() != 0 }

// Pid is the node's JVM process id, 0 when it does not run.
func (n *KafkaNode) Pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil || n.proc.Exited() {
		return 0
	}
	return n.proc.Pid()
}
