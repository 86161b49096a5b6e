package localenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// KafkaNode is one node of a Kafka cluster: a JVM running broker and controller, that a fault
// test may kill, stop and start again on the same ports and data.
type KafkaNode struct {
	// ID is the node id (node.id), 1-based.
	ID int
	// Addr is the client listener ("127.0.0.1:port"); ControllerAddr the KRaft controller's.
	Addr, ControllerAddr string
	// Dir holds server.properties, the data (data/) and the log.
	Dir string
	// LogFile is where the node logs, appended to across restarts.
	LogFile string

	k    *Kafka
	mu   sync.Mutex
	proc *Process
	// stopped says the current process was killed or stopped on purpose: its exit is no
	// failure to start.
	stopped bool
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

// offsetsPartitions is the partition count of the consumer offsets topic.
const offsetsPartitions = 4

// serverProperties is the node's configuration: loopback only, topics created explicitly, with
// three nodes replication factor 3 and two in-sync replicas as production; small for a small
// machine, and a dead broker fenced after 3 s so leadership moves quickly.
func (n *KafkaNode) serverProperties(voters string) string {
	nodes := len(n.k.Nodes)
	rf := min(3, nodes)
	isr := min(2, rf)
	props := []string{
		"process.roles=broker,controller",
		"node.id=" + strconv.Itoa(n.ID),
		"controller.quorum.voters=" + voters,
		"listeners=PLAINTEXT://" + n.Addr + ",CONTROLLER://" + n.ControllerAddr,
		"advertised.listeners=PLAINTEXT://" + n.Addr,
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"controller.listener.names=CONTROLLER",
		"inter.broker.listener.name=PLAINTEXT",
		"log.dirs=" + filepath.Join(n.Dir, "data"),
		"auto.create.topics.enable=false",
		"delete.topic.enable=true",
		"unclean.leader.election.enable=false",
		"num.partitions=1",
		"default.replication.factor=" + strconv.Itoa(rf),
		"min.insync.replicas=" + strconv.Itoa(isr),
		"offsets.topic.replication.factor=" + strconv.Itoa(rf),
		"offsets.topic.num.partitions=" + strconv.Itoa(offsetsPartitions),
		"transaction.state.log.replication.factor=" + strconv.Itoa(rf),
		"transaction.state.log.min.isr=" + strconv.Itoa(isr),
		"transaction.state.log.num.partitions=4",
		"group.initial.rebalance.delay.ms=0",
		"group.min.session.timeout.ms=1000",
		"log.segment.bytes=1048576",
		"num.network.threads=2",
		"num.io.threads=4",
		"background.threads=4",
		"num.recovery.threads.per.data.dir=1",
		"num.replica.fetchers=1",
		"log.cleaner.threads=1",
		"log.cleaner.dedupe.buffer.size=8388608",
		"broker.heartbeat.interval.ms=500",
		"broker.session.timeout.ms=3000",
		"replica.lag.time.max.ms=10000",
	}
	if major(n.k.Version) != "3" {
		// Internal topics of 4.x (share groups), created only when used.
		props = append(props,
			"share.coordinator.state.topic.replication.factor="+strconv.Itoa(rf),
			"share.coordinator.state.topic.min.isr="+strconv.Itoa(isr))
	}
	return strings.Join(props, "\n") + "\n"
}

// log4j configurations, per major version: everything to the console, the node's log file.
const (
	log4jProperties = `log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
`
	log4j2Properties = `status = warn
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
`
)

// log4j is the node's logging configuration file, the JVM option naming it and its content.
func (n *KafkaNode) log4j() (file, flag, content string) {
	if major(n.k.Version) == "3" {
		return "log4j.properties", "-Dlog4j.configuration=file:", log4jProperties
	}
	return "log4j2.properties", "-Dlog4j2.configurationFile=", log4j2Properties
}

func (n *KafkaNode) writeConfig(voters string) error {
	if err := os.MkdirAll(filepath.Join(n.Dir, "data"), 0o755); err != nil {
		return fmt.Errorf("kafka node %d: %w", n.ID, err)
	}
	log4j, _, content := n.log4j()
	files := map[string]string{"server.properties": n.serverProperties(voters), log4j: content}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(n.Dir, name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("kafka node %d: %w", n.ID, err)
		}
	}
	return nil
}

// jvmArgs are the java arguments before the main class: a small heap, the serial collector and
// the client compiler, which start fastest, the logging configuration, then JVMOptions.
func (n *KafkaNode) jvmArgs(heapMB int) []string {
	args := []string{
		fmt.Sprintf("-Xmx%dm", heapMB), fmt.Sprintf("-Xms%dm", min(heapMB, 64)),
		"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
		"-Djava.awt.headless=true", "-Djava.net.preferIPv4Stack=true",
		"-Dkafka.logs.dir=" + n.Dir,
	}
	log4j, flag, _ := n.log4j()
	args = append(args, flag+filepath.Join(n.Dir, log4j))
	args = append(args, n.k.opts.JVMOptions...)
	return append(args, "-cp", filepath.Join(n.k.Dist.Libs, "*"))
}

// format formats the node's storage with the release's own tool for the cluster's id and its
// static quorum: the same command on 3.x and 4.x.
func (n *KafkaNode) format(ctx context.Context) error {
	args := append(n.jvmArgs(128), "kafka.tools.StorageTool", "format",
		"--config", filepath.Join(n.Dir, "server.properties"), "--cluster-id", n.k.clusterID)
	cmd := exec.CommandContext(ctx, n.k.java, args...)
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
	cmd := exec.Command(n.k.java, append(n.jvmArgs(n.k.opts.HeapMB), "kafka.Kafka", filepath.Join(n.Dir, "server.properties"))...)
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
