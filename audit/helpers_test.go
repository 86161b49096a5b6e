package audit_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/acv/acv/internal/testkit"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/audit"
	"github.com/acv/acv/internal/localenv"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// The tests' outbox layout, like the cache package's: one outbox list per hash-tag shard, a
// project's events in its shard's. Package audit does not
// know the layout; the relay is handed the names.
const testShards = 8

// outboxKey names a shard's outbox.
func outboxKey(shard int) string { return fmt.Sprintf("acv:{%02d}:events", shard) }

// testOutboxes are what the tests write to and the relays read.
var testOutboxes = shardNames(outboxKey)

func shardNames(name func(int) string) []string {
	out := make([]string, testShards)
	for s := range out {
		out[s] = name(s)
	}
	return out
}

// shardOf is a project's shard.
func shardOf(projectID string) int {
	h := fnv.New32a()
	h.Write([]byte(projectID))
	return int(h.Sum32() % testShards)
}

// outboxLen is the number of entries the test outboxes and streams hold.
func outboxLen(t *testing.T, rdb redis.Cmdable) int64 {
	t.Helper()
	n, _, err := audit.OutboxLen(context.Background(), rdb, testOutboxes)
	if err != nil {
		t.Fatalf("outbox length: %v", err)
	}
	return n
}

// env is one test's Redis server, and its topic on a real Kafka broker.
type env struct {
	rdb        *redis.Client
	kafka      *localenv.Kafka
	brokers    []string
	topic      string
	partitions int
}

// eachKafka runs body once per Kafka release (testkit.EachKafka: parallel subtests named
// after the release), each with an env of its own whose topic has the given partitions.
func eachKafka(t *testing.T, partitions int, body func(t *testing.T, e *env)) {
	t.Helper()
	testkit.EachKafka(t, func(t *testing.T, k *localenv.Kafka) {
		body(t, newEnv(t, k, partitions))
	})
}

// newEnv starts a Redis server for the test and creates a topic of its own on k.
func newEnv(t *testing.T, k *localenv.Kafka, partitions int) *env {
	t.Helper()
	r := testkit.RedisServer(t, localenv.RedisOptions{})
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr, PoolSize: 64})
	t.Cleanup(func() { rdb.Close() })
	topic := testkit.KafkaTopic(t, k, partitions)
	return &env{rdb: rdb, kafka: k, brokers: k.Brokers, topic: topic, partitions: partitions}
}

// writer is the relay's Kafka writer for the test's topic.
func (e *env) writer(t *testing.T) *kafka.Writer {
	w := audit.NewWriter(e.brokers, e.topic)
	t.Cleanup(func() { w.Close() })
	return w
}

// relayConfig is a relay of the test outboxes tuned for tests: short pauses, quick trims.
func relayConfig(name string) audit.RelayConfig {
	return audit.RelayConfig{Outboxes: testOutboxes, Name: name,
		Poll: 5 * time.Millisecond, IdlePoll: 20 * time.Millisecond, TrimEvery: 50 * time.Millisecond}
}

// newMetrics is a Metrics of its own registry, to read one relay's or consumer's series.
func newMetrics() (*audit.Metrics, *prometheus.Registry) {
	reg := prometheus.NewRegistry()
	return audit.NewMetrics(reg), reg
}

// metricValue sums the values of the counter or gauge series name whose labels include the
// given name/value pairs.
func metricValue(t *testing.T, reg prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	v, _ := gatherSeries(t, reg, name, labels...)
	return v
}

// histogramValue is the sample count and sum of the histogram series name.
func histogramValue(t *testing.T, reg prometheus.Gatherer, name string) (count uint64, sum float64) {
	t.Helper()
	sum, count = gatherSeries(t, reg, name)
	return count, sum
}

// gatherSeries gathers the family name and sums, over its series whose labels include the
// given name/value pairs, the values of counters and gauges, or the sample sums and counts of
// histograms. A family that does not exist fails the test.
func gatherSeries(t *testing.T, reg prometheus.Gatherer, name string, labels ...string) (sum float64, count uint64) {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, l := range m.GetLabel() {
					found = found || l.GetName() == labels[i] && l.GetValue() == labels[i+1]
				}
				if !found {
					continue series
				}
			}
			switch {
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				sum += m.GetHistogram().GetSampleSum()
				count += m.GetHistogram().GetSampleCount()
			default:
				t.Fatalf("%s is not a counter, gauge or histogram", name)
			}
		}
		return sum, count
	}
	t.Fatalf("no metric family %s", name)
	return 0, 0
}

// consumerConfig is a consumer tuned for tests: short batch wait, fast group join.
func (e *env) consumerConfig(group string) audit.ConsumerConfig {
	return audit.ConsumerConfig{
		Brokers:           e.brokers,
		Topic:             e.topic,
		GroupID:           group,
		BatchWait:         20 * time.Millisecond,
		HeartbeatInterval: 200 * time.Millisecond,
		SessionTimeout:    6 * time.Second,
		RebalanceTimeout:  2 * time.Second,
		JoinGroupBackoff:  100 * time.Millisecond,
	}
}

// bg is a Run method running in the background until the test ends.
type bg struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// start runs fn in the background; the test's cleanup stops it and reports an error it returned.
func start(t *testing.T, fn func(ctx context.Context) error) *bg {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b := &bg{cancel: cancel, done: make(chan struct{})}
	go func() {
		b.err = fn(ctx)
		close(b.done)
	}()
	t.Cleanup(func() {
		if err := b.stop(); err != nil && !errors.Is(err, errCrash) {
			t.Errorf("background run: %v", err)
		}
	})
	return b
}

// wait waits up to d for fn to return by itself; ok is false when it is still running.
func (b *bg) wait(d time.Duration) (err error, ok bool) {
	select {
	case <-b.done:
		return b.err, true
	case <-time.After(d):
		return nil, false
	}
}

// stop ends fn's context and returns what fn returned.
func (b *bg) stop() error {
	b.cancel()
	err, ok := b.wait(20 * time.Second)
	if !ok {
		return errors.New("did not stop within 20s")
	}
	return err
}

// startConsumer runs a consumer into sink until the test ends.
func (e *env) startConsumer(t *testing.T, cfg audit.ConsumerConfig, sink audit.Sink) *audit.Consumer {
	t.Helper()
	c := audit.NewConsumer(cfg, sink)
	b := start(t, c.Run)
	t.Cleanup(func() {
		b.stop()
		c.Close()
	})
	return c
}

// newEvent is an event of code on project with the given version.
func newEvent(project, code string, version int64) contract.Event {
	return contract.Event{
		ID: contract.NewID(), CodeID: code, ProjectID: project, Action: contract.ActionVerify,
		Result: contract.ResultSuccess, VerifiedBy: "pos-1", IP: "10.0.0.1", TS: time.Now().UnixMilli(),
		Version: version, Changed: true, VerifiedAt: time.Now().UnixMilli(), StateBy: "pos-1",
	}
}

// spreadEvents makes n events over projects projects (so over many shards), one code each.
func spreadEvents(n, projects int) []contract.Event {
	pids := make([]string, projects)
	for i := range pids {
		pids[i] = contract.NewID()
	}
	evs := make([]contract.Event, n)
	for i := range evs {
		evs[i] = newEvent(pids[i%projects], contract.NewID(), 1)
	}
	return evs
}

// push appends ev to its shard's outbox in the compact form the verify script writes
// (compactEntry), as the API does.
func push(ctx context.Context, rdb redis.Cmdable, ev contract.Event) error {
	raw, err := compactEntry(ev)
	if err != nil {
		return err
	}
	return rdb.RPush(ctx, outboxKey(shardOf(ev.ProjectID)), raw).Err()
}

// compactEntry is ev's outbox entry in the compact form: the head the API encodes, then what
// the verify script appends (api/contract/outbox.go). ev must be a verify that changed its
// code's state or one refused with a reason; it is an error when the entry does not decode to
// ev exactly.
func compactEntry(ev contract.Event) (string, error) {
	op := contract.Operation{Action: ev.Action, ProjectID: ev.ProjectID, EventID: ev.ID, By: ev.VerifiedBy,
		IP: ev.IP, Now: time.UnixMilli(ev.TS)}
	head, err := contract.AppendEventHead(nil, op)
	if err != nil {
		return "", err
	}
	codeID, err := hex.DecodeString(ev.CodeID)
	if err != nil {
		return "", err
	}
	disabled, errCode, before := "0", ev.Reason, ev.Version
	if ev.Disabled {
		disabled = "1"
	}
	if ev.Changed {
		errCode, before = "", ev.Version-1
	}
	vat := ""
	if ev.VerifiedAt != 0 {
		vat = strconv.FormatInt(ev.VerifiedAt, 10)
	}
	raw := string(head) + string(codeID) + disabled + errCode + "|" + strconv.FormatInt(before, 10) + "|" + vat + "|" + ev.StateBy
	if got, _, err := contract.DecodeOutboxEntry(raw); err != nil || got != ev {
		return "", fmt.Errorf("compact entry of %+v decodes to %+v, %v", ev, got, err)
	}
	return raw, nil
}

func pushAll(t *testing.T, rdb redis.Cmdable, evs []contract.Event) {
	t.Helper()
	for _, ev := range evs {
		if err := push(context.Background(), rdb, ev); err != nil {
			t.Fatalf("push: %v", err)
		}
	}
}

// pushCompact appends a verify's event in the compact form the cache's verify script writes
// (head from the API, then what the script appends), with trace context, and returns the
// event it holds.
func pushCompact(t *testing.T, rdb redis.Cmdable, traceParent string) contract.Event {
	t.Helper()
	op := contract.Operation{Action: contract.ActionVerify, ProjectID: contract.NewID(), EventID: contract.NewID(),
		By: "till-7", IP: "127.0.0.1", TraceParent: traceParent, Now: time.Now()}
	head, err := contract.AppendEventHead(nil, op)
	if err != nil {
		t.Fatal(err)
	}
	codeID, err := hex.DecodeString(contract.NewID())
	if err != nil {
		t.Fatal(err)
	}
	ts := strconv.FormatInt(op.Now.UnixMilli(), 10)
	raw := string(head) + string(codeID) + "0" + "|0|" + ts + "|till-7"
	ev, tp, err := contract.DecodeOutboxEntry(raw)
	if err != nil || tp != traceParent || !ev.Changed {
		t.Fatalf("compact entry decodes to %+v, %q, %v", ev, tp, err)
	}
	if err := rdb.RPush(context.Background(), outboxKey(shardOf(op.ProjectID)), raw).Err(); err != nil {
		t.Fatal(err)
	}
	return ev
}

// memSink is the Postgres sink reduced to its contract: one row per event id, redeliveries
// ignored. It remembers the order in which rows were inserted.
type memSink struct {
	mu       sync.Mutex
	rows     map[string]contract.Event
	order    []contract.Event
	received int
	fails    int // the next calls that fail
}

func newMemSink() *memSink { return &memSink{rows: map[string]contract.Event{}} }

func (s *memSink) ApplyEvents(ctx context.Context, events []contract.Event) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fails > 0 {
		s.fails--
		return 0, errors.New("sink unavailable")
	}
	s.received += len(events)
	n := 0
	for _, ev := range events {
		if _, dup := s.rows[ev.ID]; dup {
			continue
		}
		s.rows[ev.ID] = ev
		s.order = append(s.order, ev)
		n++
	}
	return n, nil
}

func (s *memSink) counts() (rows, received int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.rows), s.received
}

// checkRows asserts the sink holds exactly the events evs, each once.
func (s *memSink) checkRows(t *testing.T, evs []contract.Event) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.rows) != len(evs) {
		t.Fatalf("sink holds %d rows, want %d", len(s.rows), len(evs))
	}
	for _, ev := range evs {
		got, ok := s.rows[ev.ID]
		if !ok {
			t.Fatalf("event %s missing from the sink", ev.ID)
		}
		if got != ev {
			t.Fatalf("event %s arrived as %+v, want %+v", ev.ID, got, ev)
		}
	}
}

// waitRows waits until the sink holds n rows.
func waitRows(t *testing.T, s *memSink, n int) {
	t.Helper()
	testkit.WaitFor(t, 30*time.Second, fmt.Sprintf("sink holds %d rows", n), func() (bool, string) {
		rows, recv := s.counts()
		return rows == n, fmt.Sprintf("rows %d, received %d", rows, recv)
	})
}

// waitOutboxEmpty waits until every outbox is empty.
func (e *env) waitOutboxEmpty(t *testing.T) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, "outbox empty", func() (bool, string) {
		n, age, err := audit.OutboxLen(context.Background(), e.rdb, testOutboxes)
		if err != nil {
			t.Fatalf("outbox len: %v", err)
		}
		return n == 0, fmt.Sprintf("%d entries, oldest %s", n, age)
	})
}

// messagesOf reads the test's topic, which must hold a message per event of evs, and gives
// evs by event id beside them.
func (e *env) messagesOf(t *testing.T, evs []contract.Event) ([]kafka.Message, map[string]contract.Event) {
	t.Helper()
	byID := map[string]contract.Event{}
	for _, ev := range evs {
		byID[ev.ID] = ev
	}
	msgs := e.topicMessages(t)
	if len(msgs) != len(evs) {
		t.Fatalf("topic holds %d messages, want %d", len(msgs), len(evs))
	}
	return msgs, byID
}

// topicMessages reads every message of the test's topic, partition by partition.
func (e *env) topicMessages(t *testing.T) []kafka.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out []kafka.Message
	for p := 0; p < e.partitions; p++ {
		conn, err := kafka.DialLeader(ctx, "tcp", e.brokers[0], e.topic, p)
		if err != nil {
			t.Fatalf("dial partition %d: %v", p, err)
		}
		last, err := conn.ReadLastOffset()
		conn.Close()
		if err != nil {
			t.Fatalf("last offset of partition %d: %v", p, err)
		}
		if last == 0 {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: e.brokers, Topic: e.topic, Partition: p, MaxWait: 100 * time.Millisecond})
		for {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				r.Close()
				t.Fatalf("read partition %d: %v", p, err)
			}
			out = append(out, m)
			if m.Offset >= last-1 {
				break
			}
		}
		r.Close()
	}
	return out
}

// logProducer reports how the writer batched the test's events: messages per produce request,
// and the bytes an event takes as it left the relay (key and value) and as Kafka stored it (the
// topic's log segments, batch headers and compression included).
func (e *env) logProducer(t *testing.T, w *kafka.Writer, events int) {
	t.Helper()
	st := w.Stats()
	stored, err := e.kafka.TopicLogBytes(e.topic)
	if err != nil {
		t.Fatalf("topic size: %v", err)
	}
	if st.Writes == 0 || events == 0 {
		t.Fatalf("writer stats: %d produce requests for %d events", st.Writes, events)
	}
	t.Logf("kafka %s producer: %d messages in %d produce requests (%.1f per request, %d retries); %d bytes per event written, %d stored",
		e.kafka.Version, st.Messages, st.Writes, float64(st.Messages)/float64(st.Writes), st.Retries,
		st.Bytes/int64(events), stored/int64(events))
}
