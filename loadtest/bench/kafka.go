package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/acv/acv/audit"
	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/settings"
	"github.com/segmentio/kafka-go"
)

// kafkaSegmentBytes is the log topic's segment size. localenv's brokers roll 1 MiB segments,
// sized for tests; a broker in production keeps Kafka's default of 1 GiB, and rolling a
// segment every few hundred milliseconds would charge the broker a cost production does not
// pay.
const kafkaSegmentBytes = 1 << 30

// kafkaPartitions is the log topic's partition count, as ACV_KAFKA_PARTITIONS defaults to.
const kafkaPartitions = 8

// startKafka starts a real one-node Apache Kafka 4.4.0 (KRaft, one JVM) as a process of its
// own, so its CPU is read like every other part's, and creates the log topic. The JVM runs
// the full JIT (C2): here its throughput matters more than how fast it starts.
func (b *bench) startKafka(ctx context.Context) error {
	t0 := time.Now()
	k, err := localenv.StartKafka(ctx, filepath.Join(b.dir, "kafka"), localenv.KafkaOptions{
		Version: localenv.Kafka4, HeapMB: 512, JVMOptions: []string{"-XX:TieredStopAtLevel=4"},
		JavaHome: settings.Get("JAVA_HOME"), JarCache: settings.Get("ACV_KAFKA_CACHE"),
	})
	if err != nil {
		return fmt.Errorf("start kafka: %w", err)
	}
	b.kafka = k
	if err := k.CreateTopic(ctx, audit.Topic, kafkaPartitions, 1); err != nil {
		return err
	}
	cl := &kafka.Client{Addr: kafka.TCP(k.Brokers...), Timeout: 30 * time.Second}
	res, err := cl.IncrementalAlterConfigs(ctx, &kafka.IncrementalAlterConfigsRequest{Resources: []kafka.IncrementalAlterConfigsRequestResource{{
		ResourceType: kafka.ResourceTypeTopic, ResourceName: audit.Topic,
		Configs: []kafka.IncrementalAlterConfigsRequestConfig{{Name: "segment.bytes", Value: strconv.Itoa(kafkaSegmentBytes), ConfigOperation: kafka.ConfigOperationSet}},
	}}})
	if err != nil {
		return fmt.Errorf("set segment.bytes of %s: %w", audit.Topic, err)
	}
	for _, r := range res.Resources {
		if r.Error != nil {
			return fmt.Errorf("set segment.bytes of %s: %w", audit.Topic, r.Error)
		}
	}
	if err := k.WaitGroupCoordinator(ctx, time.Minute); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "bench: kafka %s up in %.1f s (JVM start %.1f s)\n", k.Version, time.Since(t0).Seconds(), k.Started.Seconds())
	return nil
}

// brokerCPU is the broker JVM's CPU seconds so far, every thread (network, request handlers,
// log flushes, the collector) but the JIT compilers': their work is the JVM warming up, which
// a broker running for days has done long ago, and on this machine it lasts the whole run.
func (b *bench) brokerCPU() float64 {
	if b.kafka == nil {
		return 0
	}
	pid := b.kafka.Nodes[0].Pid()
	return pidCPU(pid) - jitCPU(pid)
}

// brokerJIT is the CPU seconds of the broker JVM's live JIT compiler threads so far.
func (b *bench) brokerJIT() float64 {
	if b.kafka == nil {
		return 0
	}
	return jitCPU(b.kafka.Nodes[0].Pid())
}

// jitCPU sums the CPU of a JVM's compiler threads ("C1 CompilerThre", "C2 CompilerThre"), read
// from /proc/<pid>/task. A compiler thread the JVM ended is no longer listed; its CPU then
// counts as the broker's.
func jitCPU(pid int) float64 {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0
	}
	var t float64
	for _, e := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, e.Name()))
		if err != nil {
			continue
		}
		if i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')'); i < 0 || j < i || !bytes.Contains(b[i:j], []byte("CompilerThre")) {
			continue
		}
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			t += taskCPU(pid, tid)
		}
	}
	return t
}
