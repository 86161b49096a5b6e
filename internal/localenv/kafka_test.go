package localenv_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/acv/acv/internal/localenv"
)

// startKafka starts a cluster of nodes of version for the test, torn down when it ends.
func startKafka(t *testing.T, version string, nodes int) *localenv.Kafka {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	k, err := localenv.StartKafka(ctx, t.TempDir(), localenv.KafkaOptions{Version: version, Nodes: nodes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	t.Logf("kafka %s, nodes: %d: storage formatted in %s, started in %s (jars: %d, %.1f MB, fetched in %s)",
		version, nodes, k.Formatted.Round(time.Millisecond), k.Started.Round(time.Millisecond),
		k.Dist.Jars, float64(k.Dist.Bytes)/1e6, k.Dist.Fetched.Round(time.Millisecond))
	return k
}

// produce writes n messages to topic as the relay does (acks=all, keyed) and returns the
// error of the write.
func produce(ctx context.Context, k *localenv.Kafka, topic string, from, n int) error {
	w := &kafka.Writer{Addr: kafka.TCP(k.Brokers...), Topic: topic, Balancer: &kafka.Hash{},
		RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, MaxAttempts: 10,
		Transport: &kafka.Transport{MetadataTTL: 500 * time.Millisecond}}
	defer w.Close()
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		msgs[i] = kafka.Message{Key: fmt.Appendf(nil, "k%d", from+i), Value: fmt.Appendf(nil, "v%d", from+i)}
	}
	return w.WriteMessages(ctx, msgs...)
}

// consume reads n messages of topic through consumer group group and commits them. Like the
// log writer, it retries what fails while the group finds its coordinator (which moves, and
// loads its state, when nodes restart).
func consume(ctx context.Context, k *localenv.Kafka, topic, group string, n int) error {
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: k.Brokers, Topic: topic, GroupID: group,
		StartOffset: kafka.FirstOffset, MaxWait: 100 * time.Millisecond, JoinGroupBackoff: 100 * time.Millisecond,
		HeartbeatInterval: 200 * time.Millisecond, SessionTimeout: 6 * time.Second})
	defer r.Close()
	var last error
	for got := 0; got < n; {
		if ctx.Err() != nil {
			return fmt.Errorf("%d of %d messages: %w (last error: %v)", got, n, ctx.Err(), last)
		}
		m, err := r.FetchMessage(ctx)
		if err == nil {
			err = r.CommitMessages(ctx, m)
		}
		if err != nil {
			last = err
			time.Sleep(100 * time.Millisecond)
			continue
		}
		got++
	}
	return nil
}

// One node of each release starts, takes a topic, and serves a producer and a consumer group
// as the relay and the log writer use them, and every request kafka-go's Conn sends.
func TestKafkaOneNode(t *testing.T) {
	for _, v := range localenv.KafkaVersions {
		t.Run(v, func(t *testing.T) {
			k := startKafka(t, v, 1)
			t.Run("produce and consume", func(t *testing.T) { testProduceConsume(t, k) })
			t.Run("kafka-go request versions", func(t *testing.T) { testKafkaGoRequestVersions(t, k) })
			t.Run("rejected versions are logged", func(t *testing.T) { testRejectedVersionLogged(t, k) })
		})
	}
}

// testProduceConsume creates a topic, writes to it as the relay does and reads it back in a
// consumer group as the log writer does.
func testProduceConsume(t *testing.T, k *localenv.Kafka) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := k.CreateTopic(ctx, "t", 4, 0); err != nil {
		t.Fatal(err)
	}
	if err := k.CreateTopic(ctx, "t", 4, 0); !errors.Is(err, kafka.TopicAlreadyExists) {
		t.Errorf("creating the topic again: %v, want TopicAlreadyExists", err)
	}
	if err := produce(ctx, k, "t", 0, 100); err != nil {
		t.Fatalf("produce: %v", err)
	}
	if err := consume(ctx, k, "t", "g", 100); err != nil {
		t.Fatalf("consume: %v", err)
	}
	// No auto-creation: a producer to a missing topic fails instead of creating it.
	if err := produce(ctx, k, "missing", 0, 1); err == nil {
		t.Error("producing to a missing topic succeeded")
	}
	if n, err := k.TopicLogBytes("t"); err != nil || n == 0 {
		t.Errorf("topic log bytes = %d, %v", n, err)
	}
}

// kafkaGoRequests are the requests kafka-go v0.4.51 sends outside kafka.Client and
// kafka.Transport (which negotiate every request from the broker's ApiVersions): those of Conn,
// which the consumer group, EnsureTopic and the tests' readers use. fixed are versions it always
// sends (Conn.Brokers and Conn.Controller ask for Metadata v1 whatever the broker supports);
// negotiated, versions of which it sends the highest the broker's maximum allows. A release
// that removed one of these would break them, as Kafka 4.0.0 did for JoinGroup v1 (KIP-896;
// kafka-go sent only v1 before v0.4.48, and Kafka took v0-v1 back in 4.0.1).
var kafkaGoRequests = []struct {
	key        int16
	name       string
	fixed      []int16
	negotiated []int16
}{
	{0, "Produce", nil, []int16{2, 3, 7}},
	{1, "Fetch", nil, []int16{2, 5, 10}},
	{2, "ListOffsets", []int16{1}, nil},
	{3, "Metadata", []int16{1}, []int16{1, 6}},
	{8, "OffsetCommit", []int16{2}, nil},
	{9, "OffsetFetch", []int16{1}, nil},
	{10, "FindCoordinator", []int16{0}, nil},
	{11, "JoinGroup", nil, []int16{1, 2}},
	{12, "Heartbeat", []int16{0}, nil},
	{13, "LeaveGroup", []int16{0}, nil},
	{14, "SyncGroup", []int16{0}, nil},
	{16, "ListGroups", []int16{1}, nil},
	{19, "CreateTopics", nil, []int16{0, 1, 2}},
	{20, "DeleteTopics", nil, []int16{0, 1}},
}

// Every request kafka-go's Conn sends is of a version each release accepts: its fixed versions
// and the negotiated one lie in the broker's ApiVersions range. (A range is not the whole
// story: Kafka 4 advertises Produce from v0 but rejects v0-v2; kafka-go sends v7. The suites'
// brokers also log every rejected version, which testkit.Main turns into a failure.)
func testKafkaGoRequestVersions(t *testing.T, k *localenv.Kafka) {
	conn, err := kafka.Dial("tcp", k.Brokers[0])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	avs, err := conn.ApiVersions()
	if err != nil {
		t.Fatal(err)
	}
	ranges := map[int16]kafka.ApiVersion{}
	for _, a := range avs {
		ranges[a.ApiKey] = a
	}
	for _, r := range kafkaGoRequests {
		a, ok := ranges[r.key]
		if !ok {
			t.Errorf("%s (key %d): not supported at all", r.name, r.key)
			continue
		}
		sent := append([]int16(nil), r.fixed...)
		if len(r.negotiated) > 0 {
			picked := int16(-1)
			for _, ver := range r.negotiated {
				if ver <= a.MaxVersion {
					picked = ver
				}
			}
			sent = append(sent, picked)
		}
		for _, ver := range sent {
			if ver < a.MinVersion || ver > a.MaxVersion {
				t.Errorf("%s (key %d): kafka-go sends v%d, the broker accepts v%d-v%d", r.name, r.key, ver, a.MinVersion, a.MaxVersion)
			}
		}
		t.Logf("%-15s key %2d: broker v%d-v%d, kafka-go sends %v", r.name, r.key, a.MinVersion, a.MaxVersion, sent)
	}
}

// testRejectedVersionLogged sends a ListOffsets v0 request, which Kafka 4 removed (KIP-896),
// and finds the broker's log line naming it: the line testkit.Main looks for after every suite
// to catch a client speaking a removed version. Kafka 3 still accepts it.
func testRejectedVersionLogged(t *testing.T, k *localenv.Kafka) {
	if strings.HasPrefix(k.Version, "3.") {
		t.Skip("Kafka 3 accepts ListOffsets v0")
	}
	c, err := net.DialTimeout("tcp", k.Brokers[0], 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Header v1 (api key 2, version 0, correlation id 1, client id "t"), then ListOffsets v0:
	// replica id -1 and no topics.
	req := []byte{0, 2, 0, 0, 0, 0, 0, 1, 0, 1, 't', 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}
	msg := append(binary.BigEndian.AppendUint32(nil, uint32(len(req))), req...)
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	const want = "Received request for api with key 2 (ListOffsets) and unsupported version 0"
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, l := range k.LogLines("UnsupportedVersionException") {
			if strings.Contains(l, want) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line %q; log tail:\n%s", want, localenv.TailFile(k.Nodes[0].LogFile, 20))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A cluster of three survives the loss of a partition's leader: a new leader is elected,
// acks=all writes go on with two in-sync replicas, the killed node comes back and catches up;
// and the whole cluster stopped and started again keeps what it acknowledged.
func TestKafkaThreeNodes(t *testing.T) {
	for _, v := range localenv.KafkaVersions {
		t.Run(v, func(t *testing.T) {
			k := startKafka(t, v, 3)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			if err := k.CreateTopic(ctx, "t", 3, 0); err != nil {
				t.Fatal(err)
			}
			parts, err := k.Partitions(ctx, "t")
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range parts {
				if len(p.Replicas) != 3 || len(p.Isr) != 3 {
					t.Fatalf("partition %d: %d replicas, %d in sync; want 3 and 3", p.ID, len(p.Replicas), len(p.Isr))
				}
			}
			if err := produce(ctx, k, "t", 0, 100); err != nil {
				t.Fatalf("produce: %v", err)
			}

			leader, err := k.Leader(ctx, "t", 0)
			if err != nil {
				t.Fatal(err)
			}
			killed := time.Now()
			leader.Kill()
			next, err := k.WaitNewLeader(ctx, "t", 0, leader, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("killed node %d (leader of partition 0); node %d leads after %s", leader.ID, next.ID, time.Since(killed).Round(time.Millisecond))
			if err := produce(ctx, k, "t", 100, 100); err != nil {
				t.Fatalf("produce with a node down: %v", err)
			}
			restarted := time.Now()
			if err := leader.Start(ctx); err != nil {
				t.Fatal(err)
			}
			if err := k.WaitInSync(ctx, "t", time.Minute); err != nil {
				t.Fatal(err)
			}
			t.Logf("node %d back and in sync after %s", leader.ID, time.Since(restarted).Round(time.Millisecond))

			stopped := time.Now()
			k.Stop()
			if len(k.Running()) != 0 {
				t.Fatal("nodes still running after Stop")
			}
			t.Logf("cluster stopped in %s", time.Since(stopped).Round(time.Millisecond))
			started := time.Now()
			if err := k.Start(ctx); err != nil {
				t.Fatal(err)
			}
			t.Logf("cluster started again in %s", time.Since(started).Round(time.Millisecond))
			if err := consume(ctx, k, "t", "g", 200); err != nil {
				t.Fatalf("consume after the restart: %v", err)
			}
		})
	}
}
