package testkit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acv/acv/audit"
	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/localenv/localkafka"
	"github.com/acv/acv/internal/plural"
	"github.com/acv/acv/internal/service"
	"github.com/acv/acv/internal/settings"
)

// KafkaVersionsEnv narrows the Apache Kafka releases the suites run against, a comma-separated
// list (e.g. "4.4.0"); unset, they run against every release of localenv.KafkaVersions.
const KafkaVersionsEnv = "ACV_KAFKA_VERSIONS"

// TimingsEnv names a file each test binary appends its figures and broker start times to:
// go test shows a passing package's output only with -v, so `make test` prints the file.
const TimingsEnv = "ACV_TEST_TIMINGS"

// KafkaOptions are the options of a cluster of nodes running version.
func KafkaOptions(version string, nodes int) localenv.KafkaOptions {
	return localenv.KafkaOptions{Version: version, Nodes: nodes}
}

// KafkaVersions are the Kafka releases the suites run against.
func KafkaVersions() []string {
	if v := settings.Get(KafkaVersionsEnv); v != "" {
		return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' })
	}
	return localenv.KafkaVersions
}

var (
	kafkas sync.Map // version → func() (*localenv.Kafka, error), the binary's shared broker
	topics atomic.Int64
)

// RealKafka is the test binary's one-node Apache Kafka of version, started on first use and
// stopped by Main. Tests share it and keep apart by topic (KafkaTopic) and consumer group.
func RealKafka(tb testing.TB, version string) *localenv.Kafka {
	tb.Helper()
	v, _ := kafkas.LoadOrStore(version, sync.OnceValues(func() (*localenv.Kafka, error) {
		dir, err := os.MkdirTemp("", "acv-kafka-")
		if err != nil {
			return nil, err
		}
		k, err := startKafka(dir, version, 1)
		if k == nil {
			os.RemoveAll(dir)
		}
		return k, err
	}))
	k, err := v.(func() (*localenv.Kafka, error))()
	if err != nil {
		tb.Fatalf("start kafka %s: %v", version, err)
	}
	return k
}

// KafkaCluster starts an Apache Kafka cluster of nodes nodes for tb alone, torn down when tb
// ends: for a fault test that kills and restarts brokers (3 nodes: replication factor 3).
func KafkaCluster(tb testing.TB, version string, nodes int) *localenv.Kafka {
	tb.Helper()
	k, err := startKafka(tb.TempDir(), version, nodes)
	if k != nil {
		tb.Cleanup(k.Close)
	}
	if err != nil {
		tb.Fatalf("start kafka %s (%d nodes): %v", version, nodes, err)
	}
	return k
}

func startKafka(dir, version string, nodes int) (*localenv.Kafka, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	k, err := localenv.StartKafka(ctx, dir, KafkaOptions(version, nodes))
	if err != nil {
		return nil, err
	}
	fetch := "jars cached"
	if k.Dist.Fetched > 0 {
		fetch = fmt.Sprintf("jars fetched in %s (%d jars, %.1f MB)", k.Dist.Fetched.Round(time.Millisecond), k.Dist.Jars, float64(k.Dist.Bytes)/1e6)
	}
	line := fmt.Sprintf("%s: Apache Kafka %s (%s) started in %s, storage formatted in %s, %s",
		filepath.Base(os.Args[0]), k.Version, plural.N(nodes, "node", "nodes"), k.Started.Round(time.Millisecond), k.Formatted.Round(time.Millisecond), fetch)
	fmt.Fprintln(os.Stderr, "testkit: "+line)
	appendTimings(line)
	return k, nil
}

// Report logs a figure line of a test and appends it, named after the test, to the timings
// file `make test` prints at the end (TimingsEnv).
func Report(tb testing.TB, format string, args ...any) {
	tb.Helper()
	line := fmt.Sprintf(format, args...)
	tb.Log(line)
	appendTimings(tb.Name() + ": " + line)
}

func appendTimings(line string) {
	if f := settings.Get(TimingsEnv); f != "" {
		if w, err := os.OpenFile(f, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
			fmt.Fprintln(w, line)
			w.Close()
		}
	}
}

// stopKafkas kills the binary's brokers, first reporting any request one rejected for its
// protocol version (KIP-896): false fails the run even when the client retried around it.
func stopKafkas() bool {
	ok := true
	kafkas.Range(func(v, start any) bool {
		k, _ := start.(func() (*localenv.Kafka, error))()
		if k == nil {
			return true
		}
		if lines := k.LogLines("UnsupportedVersionException"); len(lines) > 0 {
			ok = false
			fmt.Fprintf(os.Stderr, "testkit: Apache Kafka %s rejected %d requests for their protocol version:\n  %s\n",
				v, len(lines), strings.Join(lines, "\n  "))
		}
		k.Close()
		return true
	})
	return ok
}

// KafkaTopic creates a topic of its own for tb on k, with the given partitions and the
// cluster's replication factor, and returns its name (derived from the test's name).
func KafkaTopic(tb testing.TB, k *localenv.Kafka, partitions int) string {
	tb.Helper()
	name := fmt.Sprintf("acv.t%d.%s", topics.Add(1), topicUnsafe.ReplaceAllString(tb.Name(), "_"))
	name = name[:min(len(name), 200)]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := k.CreateTopic(ctx, name, partitions, 0); err != nil {
		tb.Fatalf("kafka %s: %v", k.Version, err)
	}
	return name
}

var topicUnsafe = regexp.MustCompile(`[^a-zA-Z0-9._-]+`)

// EachKafka runs fn as a parallel subtest per Kafka release (named after it), each on that
// release's shared broker: give each its own servers and topics, as NewStackWith does.
func EachKafka(t *testing.T, fn func(t *testing.T, k *localenv.Kafka)) {
	t.Helper()
	for _, v := range KafkaVersions() {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			fn(t, RealKafka(t, v))
		})
	}
}

// KafkaBroker starts an in-process broker with the topic for one test and closes it when the
// test ends.
func KafkaBroker(tb testing.TB, topic string, partitions int) *localkafka.Broker {
	tb.Helper()
	k, err := localkafka.Start(topic, partitions)
	if err != nil {
		tb.Fatalf("start kafka: %v", err)
	}
	tb.Cleanup(k.Close)
	return k
}

// stackKafka configures a Stack's broker: on real, a topic and consumer group of the test's
// own; without, an in-process broker of the test's own with the production topic.
func stackKafka(t *testing.T, real *localenv.Kafka, cfg *service.Config) *localkafka.Broker {
	t.Helper()
	cfg.Partitions = 4
	if real == nil {
		k := KafkaBroker(t, audit.Topic, cfg.Partitions)
		cfg.KafkaBrokers, cfg.KafkaTopic, cfg.ConsumerGroup = k.Brokers, audit.Topic, "acv-test"
		return k
	}
	cfg.KafkaTopic = KafkaTopic(t, real, cfg.Partitions)
	cfg.KafkaBrokers, cfg.ConsumerGroup = real.Brokers, "acv-test."+cfg.KafkaTopic
	return nil
}
