package testkit

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acv/acv/audit"
	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/localenv/localkafka"
	"github.com/acv/acv/internal/settings"
)

// KafkaVersionsEnv names the environment variable that narrows the Apache Kafka releases the
// suites run against, a comma-separated list (e.g. "4.4.0" for a quicker run); unset, they run
// against every release of localenv.KafkaVersions.
const KafkaVersionsEnv = "ACV_KAFKA_VERSIONS"

// TimingsEnv names the environment variable holding a file to which each test binary appends
// how long its brokers took to start: `go test ./...` shows a passing package's output only
// with -v, so `make test` prints that file instead.
const TimingsEnv = "ACV_TEST_TIMINGS"

// KafkaOptions are the options of a cluster of nodes running version, with the machine's JDK
// (JAVA_HOME) and jar cache (ACV_KAFKA_CACHE).
func KafkaOptions(version string, nodes int) localenv.KafkaOptions {
	return localenv.KafkaOptions{Version: version, Nodes: nodes,
		JavaHome: settings.Get("JAVA_HOME"), JarCache: settings.Get("ACV_KAFKA_CACHE")}
}

// KafkaVersions are the Kafka releases the suites run against.
func KafkaVersions() []string {
	v := settings.Get(KafkaVersionsEnv)
	if v == "" {
		return localenv.KafkaVersions
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// realKafka is one release's broker, shared by every test of the binary: starting a JVM takes
// seconds, a topic on it a few milliseconds.
type realKafka struct {
	once sync.Once
	k    *localenv.Kafka
	err  error
}

var (
	kafkasMu sync.Mutex
	kafkas   = map[string]*realKafka{}
	topics   atomic.Int64
)

// RealKafka is the test binary's one-node Apache Kafka of version, started on first use (the
// jars fetched on the machine's first use) and stopped by Main. Tests share it and keep apart
// by topic (KafkaTopic) and consumer group. A broker that does not start fails tb with the
// tail of its log.
func RealKafka(tb testing.TB, version string) *localenv.Kafka {
	tb.Helper()
	kafkasMu.Lock()
	rk := kafkas[version]
	if rk == nil {
		rk = &realKafka{}
		kafkas[version] = rk
	}
	kafkasMu.Unlock()
	rk.once.Do(func() {
		dir, err := os.MkdirTemp("", "acv-kafka-")
		if err != nil {
			rk.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		rk.k, rk.err = localenv.StartKafka(ctx, dir, KafkaOptions(version, 1))
		if rk.err != nil {
			os.RemoveAll(dir)
			return
		}
		// Every test's consumer group then joins at once.
		if rk.err = rk.k.WaitGroupCoordinator(ctx, time.Minute); rk.err != nil {
			return
		}
		reportStart(rk.k)
	})
	if rk.err != nil {
		tb.Fatalf("start kafka %s: %v", version, rk.err)
	}
	return rk.k
}

// KafkaCluster starts an Apache Kafka cluster of version with nodes nodes for tb alone, and
// tears it down (state included) when tb ends: for a fault test that kills, stops and restarts
// brokers, which must never touch the binary's shared broker. Nodes: 3 gives replication
// factor 3 and min.insync.replicas=2 (see localenv.KafkaOptions).
func KafkaCluster(tb testing.TB, version string, nodes int) *localenv.Kafka {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	k, err := localenv.StartKafka(ctx, tb.TempDir(), KafkaOptions(version, nodes))
	if err != nil {
		tb.Fatalf("start kafka %s (%d nodes): %v", version, nodes, err)
	}
	tb.Cleanup(k.Close)
	if err := k.WaitGroupCoordinator(ctx, time.Minute); err != nil {
		tb.Fatalf("kafka %s (%d nodes): %v", version, nodes, err)
	}
	reportStart(k)
	return k
}

// reportStart says how long the broker took to start, on stderr (shown with -v or when the
// package fails) and in the timings file when TimingsEnv names one.
func reportStart(k *localenv.Kafka) {
	fetch := "jars cached"
	if k.Dist.Fetched > 0 {
		fetch = fmt.Sprintf("jars fetched in %s (%d jars, %.1f MB)", k.Dist.Fetched.Round(time.Millisecond), k.Dist.Jars, float64(k.Dist.Bytes)/1e6)
	}
	nodes := "1 node"
	if len(k.Nodes) > 1 {
		nodes = fmt.Sprintf("%d nodes", len(k.Nodes))
	}
	line := fmt.Sprintf("%s: Apache Kafka %s (%s) started in %s, storage formatted in %s, %s",
		binaryName(), k.Version, nodes, k.Started.Round(time.Millisecond), k.Formatted.Round(time.Millisecond), fetch)
	fmt.Fprintln(os.Stderr, "testkit: "+line)
	if f := settings.Get(TimingsEnv); f != "" {
		if w, err := os.OpenFile(f, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
			fmt.Fprintln(w, line)
			w.Close()
		}
	}
}

// binaryName names the test binary ("audit.test"), so the timings file says which package.
func binaryName() string {
	if len(os.Args) == 0 {
		return "test"
	}
	name := os.Args[0]
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return name
}

// stopKafkas kills the binary's brokers and removes their state, first reporting every request
// a broker rejected for its protocol version: such a line means a client here speaks a
// version the release removed (KIP-896 in Kafka 4), which must fail the run even when the
// client retried its way around it. It returns false when it found one.
func stopKafkas() bool {
	kafkasMu.Lock()
	defer kafkasMu.Unlock()
	ok := true
	for v, rk := range kafkas {
		if rk.k == nil {
			continue
		}
		if lines := rk.k.LogLines(unsupportedVersion); len(lines) > 0 {
			ok = false
			fmt.Fprintf(os.Stderr, "testkit: Apache Kafka %s rejected %d requests for their protocol version:\n  %s\n",
				v, len(lines), strings.Join(lines, "\n  "))
		}
		rk.k.Close()
	}
	return ok
}

// unsupportedVersion is what a broker logs for a request of a version it does not support:
// "UnsupportedVersionException: Received request for api with key 11 (JoinGroup) and
// unsupported version 1".
const unsupportedVersion = "UnsupportedVersionException"

// KafkaTopic creates a topic of its own for tb on k, with the given partitions and the
// cluster's replication factor, and returns its name (derived from the test's name).
func KafkaTopic(tb testing.TB, k *localenv.Kafka, partitions int) string {
	tb.Helper()
	name := fmt.Sprintf("acv.t%d.%s", topics.Add(1), topicUnsafe.ReplaceAllString(tb.Name(), "_"))
	if len(name) > 200 {
		name = name[:200]
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := k.CreateTopic(ctx, name, partitions, 0); err != nil {
		tb.Fatalf("kafka %s: %v", k.Version, err)
	}
	return name
}

// topicUnsafe matches what a Kafka topic name may not hold.
var topicUnsafe = regexp.MustCompile(`[^a-zA-Z0-9._-]+`)

// EachKafka runs fn as a subtest per Kafka release (named after it), each on that release's
// shared broker. The subtests run in parallel with each other: give each its own servers and
// topics, as NewStackWith and KafkaTopic do.
func EachKafka(t *testing.T, fn func(t *testing.T, k *localenv.Kafka)) {
	t.Helper()
	for _, v := range KafkaVersions() {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			fn(t, RealKafka(t, v))
		})
	}
}

// stackTopic is where a Stack's pipeline runs: what its Config names.
type stackTopic struct {
	brokers    []string
	topic      string
	partitions int
	group      string
}

// stackKafka is the broker of a Stack: real, with a topic and consumer group of the test's
// own, or, when real is nil, an in-process kfake broker of the test's own with the production
// topic (the returned broker).
func stackKafka(t *testing.T, real *localenv.Kafka, partitions int) (*localkafka.Broker, stackTopic) {
	t.Helper()
	if real == nil {
		k := KafkaBroker(t, audit.Topic, partitions)
		return k, stackTopic{brokers: k.Brokers, topic: audit.Topic, partitions: partitions, group: "acv-test"}
	}
	topic := KafkaTopic(t, real, partitions)
	return nil, stackTopic{brokers: real.Brokers, topic: topic, partitions: partitions, group: "acv-test." + topic}
}
