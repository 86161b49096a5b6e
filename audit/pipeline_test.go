package audit_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/audit"
	"github.com/acv/acv/internal/testkit"
)

// The relay knows no key layout: it moves exactly the outboxes it is given, whatever their names
// (here the cache's format, hash tag included), and leaves every other list alone.
func TestRelayMovesOnlyItsOutboxes(t *testing.T) {
	for shard, want := range map[int]string{0: "acv:{00}:events", 3: "acv:{03}:events", 15: "acv:{15}:events"} {
		if got := outboxKey(shard); got != want {
			t.Errorf("outboxKey(%d) = %q, want %q", shard, got, want)
		}
	}
	eachKafka(t, 2, func(t *testing.T, e *env) {
		ctx := context.Background()
		mine := []string{outboxKey(0), outboxKey(3), outboxKey(15)}
		other := outboxKey(9)
		for _, key := range append(mine, other) {
			raw, err := compactEntry(newEvent(contract.NewID(), contract.NewID(), 1))
			if err != nil {
				t.Fatal(err)
			}
			if err := e.rdb.RPush(ctx, key, raw).Err(); err != nil {
				t.Fatal(err)
			}
		}
		cfg := relayConfig("r1")
		cfg.Outboxes = mine
		m, reg := newMetrics()
		cfg.Metrics = m
		start(t, audit.NewRelay(e.rdb, e.writer(t), cfg).Run)
		testkit.WaitFor(t, 10*time.Second, "the relay's outboxes drained", func() (bool, string) {
			n, _, err := audit.OutboxLen(ctx, e.rdb, mine)
			if err != nil {
				t.Fatalf("outbox len: %v", err)
			}
			return n == 0, fmt.Sprintf("%d entries", n)
		})
		if n, _, err := audit.OutboxLen(ctx, e.rdb, []string{other}); err != nil || n != 1 {
			t.Errorf("the outbox not given to the relay holds %d entries (%v), want 1", n, err)
		}
		if got := metricValue(t, reg, "acv_relay_published_total"); got != float64(len(mine)) {
			t.Errorf("relay published %v entries, want %d", got, len(mine))
		}
	})
}

// A relay without outboxes has nothing to do: Run refuses at once instead of idling.
func TestRelayWithoutOutboxes(t *testing.T) {
	cfg := relayConfig("r1")
	cfg.Outboxes = nil
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	if err := audit.NewRelay(rdb, nil, cfg).Run(context.Background()); err == nil {
		t.Fatal("Run without outboxes returned nil, want an error")
	}
}

// NewMetrics registers lint-clean series, each error stage present from the start.
func TestMetricsSeries(t *testing.T) {
	_, reg := newMetrics()
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("metric %s: %s", p.Metric, p.Text)
	}
	for name, want := range map[string]int{
		"acv_relay_errors_total":                   5, // publish, remove, read, lease, decode
		"acv_consumer_errors_total":                4, // fetch, write, commit, decode
		"acv_relay_published_total":                1,
		"acv_relay_removed_total":                  1,
		"acv_relay_trims_refused_total":            1,
		"acv_relay_outboxes_held":                  1,
		"acv_relay_live_relays":                    1,
		"acv_relay_last_publish_timestamp_seconds": 1,
	} {
		if n, err := testutil.GatherAndCount(reg, name); err != nil || n != want {
			t.Errorf("%s: %d series (%v), want %d", name, n, err, want)
		}
	}
}

// Events on several shard streams reach the sink exactly once, keyed by code id in Kafka, and
// leave the outbox empty.
func TestPipelineDeliversEachEventOnce(t *testing.T) {
	eachKafka(t, 4, func(t *testing.T, e *env) {
		evs := spreadEvents(300, 40)
		pushAll(t, e.rdb, evs[:150])
		// One entry, in the compact form the verify script writes, carries trace context, which
		// must ride along as a Kafka header.
		const traceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		traced := pushCompact(t, e.rdb, traceParent)
		evs = append(evs, traced)

		n, age, err := audit.OutboxLen(context.Background(), e.rdb, testOutboxes)
		if err != nil || n != 151 || age <= 0 {
			t.Fatalf("OutboxLen before relaying = %d, %s, %v; want 151 entries with an age", n, age, err)
		}

		rcfg := relayConfig("r1")
		rm, rreg := newMetrics()
		rcfg.Metrics = rm
		start(t, audit.NewRelay(e.rdb, e.writer(t), rcfg).Run)
		sink := newMemSink()
		ccfg := e.consumerConfig("sink")
		cm, creg := newMetrics()
		ccfg.Metrics = cm
		e.startConsumer(t, ccfg, sink)
		pushAll(t, e.rdb, evs[150:300]) // some while the relay runs

		waitRows(t, sink, len(evs))
		e.waitOutboxEmpty(t)
		sink.checkRows(t, evs)
		if _, recv := sink.counts(); recv != len(evs) {
			t.Errorf("sink received %d events, want %d (no fault, so no redelivery)", recv, len(evs))
		}

		msgs, byID := e.messagesOf(t, evs)
		for _, m := range msgs {
			ev, _, err := contract.DecodeOutboxEntry(string(m.Value))
			if err != nil {
				t.Fatalf("message value is not an event: %v", err)
			}
			if string(m.Key) != byID[ev.ID].CodeID {
				t.Fatalf("message key %q, want code id %q", m.Key, byID[ev.ID].CodeID)
			}
			if ev.ID == traced.ID {
				if len(m.Headers) != 1 || m.Headers[0].Key != "traceparent" || string(m.Headers[0].Value) != traceParent {
					t.Errorf("traced message headers = %v", m.Headers)
				}
			} else if len(m.Headers) != 0 {
				t.Errorf("untraced message has headers %v", m.Headers)
			}
		}

		published := metricValue(t, rreg, "acv_relay_published_total")
		removed := metricValue(t, rreg, "acv_relay_removed_total")
		malformed := metricValue(t, rreg, "acv_relay_errors_total", "stage", "decode")
		if published != float64(len(evs)) || removed != float64(len(evs)) || malformed != 0 {
			t.Errorf("relay published %v, removed %v, %v malformed; want %d, %d, 0", published, removed, malformed, len(evs), len(evs))
		}
		testkit.WaitFor(t, 5*time.Second, "consumer series", func() (bool, string) {
			written := metricValue(t, creg, "acv_consumer_events_written_total")
			dups := metricValue(t, creg, "acv_consumer_duplicates_skipped_total")
			lastCommit := metricValue(t, creg, "acv_consumer_last_commit_timestamp_seconds")
			return written == float64(len(evs)) && dups == 0 && lastCommit > 0,
				fmt.Sprintf("written %v, duplicates %v, last commit %v", written, dups, lastCommit)
		})
	})
}

// Entries that are not events are reported, not fatal: one that does not decode is published
// unkeyed and skipped by the consumer.
func TestMalformedEntriesAreSkipped(t *testing.T) {
	eachKafka(t, 2, func(t *testing.T, e *env) {
		ctx := context.Background()
		good := newEvent(contract.NewID(), contract.NewID(), 1)
		if err := e.rdb.RPush(ctx, outboxKey(2), "{not json").Err(); err != nil {
			t.Fatal(err)
		}
		if err := push(ctx, e.rdb, good); err != nil {
			t.Fatal(err)
		}
		rcfg := relayConfig("r1")
		rm, rreg := newMetrics()
		rcfg.Metrics = rm
		start(t, audit.NewRelay(e.rdb, e.writer(t), rcfg).Run)
		sink := newMemSink()
		ccfg := e.consumerConfig("sink")
		cm, creg := newMetrics()
		ccfg.Metrics = cm
		e.startConsumer(t, ccfg, sink)
		waitRows(t, sink, 1)
		e.waitOutboxEmpty(t)
		sink.checkRows(t, []contract.Event{good})
		malformed := metricValue(t, rreg, "acv_relay_errors_total", "stage", "decode")
		published := metricValue(t, rreg, "acv_relay_published_total")
		if malformed != 1 || published != 2 {
			t.Errorf("relay: %v malformed, %v published; want 1 malformed, 2 published", malformed, published)
		}
		testkit.WaitFor(t, 5*time.Second, "consumer counts the malformed message", func() (bool, string) {
			malformed := metricValue(t, creg, "acv_consumer_errors_total", "stage", "decode")
			written := metricValue(t, creg, "acv_consumer_events_written_total")
			return malformed == 1 && written == 1, fmt.Sprintf("%v malformed, %v written", malformed, written)
		})
	})
}

// Events of one code reach the sink in version order: one key, one partition, one order.
func TestPerCodeOrder(t *testing.T) {
	eachKafka(t, 8, func(t *testing.T, e *env) {
		const codes, versions = 20, 25
		type code struct{ project, id string }
		cs := make([]code, codes)
		for i := range cs {
			cs[i] = code{project: contract.NewID(), id: contract.NewID()}
			if i%4 != 0 {
				cs[i].project = cs[i-1].project // a few codes share a project, so an outbox
			}
		}
		var evs []contract.Event
		for v := int64(1); v <= versions; v++ {
			for _, c := range cs {
				evs = append(evs, newEvent(c.project, c.id, v))
			}
		}
		cfg := relayConfig("r1")
		cfg.Batch = 37 // many batches, each splitting one code's run
		relay := audit.NewRelay(e.rdb, e.writer(t), cfg)
		start(t, relay.Run)
		sink := newMemSink()
		ccfg := e.consumerConfig("sink")
		ccfg.BatchSize = 50
		e.startConsumer(t, ccfg, sink)
		pushAll(t, e.rdb, evs)

		waitRows(t, sink, len(evs))
		sink.mu.Lock()
		last := map[string]int64{}
		for _, ev := range sink.order {
			if ev.Version != last[ev.CodeID]+1 {
				sink.mu.Unlock()
				t.Fatalf("code %s: version %d arrived after %d", ev.CodeID, ev.Version, last[ev.CodeID])
			}
			last[ev.CodeID] = ev.Version
		}
		sink.mu.Unlock()

		partition := map[string]int{}
		for _, m := range e.topicMessages(t) {
			if p, seen := partition[string(m.Key)]; seen && p != m.Partition {
				t.Fatalf("code %s in partitions %d and %d", m.Key, p, m.Partition)
			}
			partition[string(m.Key)] = m.Partition
		}
	})
}

// Thousands of events appended by hundreds of concurrent writers while the relay runs all
// arrive, each once.
func TestConcurrentProducers(t *testing.T) {
	eachKafka(t, 6, func(t *testing.T, e *env) {
		w := e.writer(t)
		relay := audit.NewRelay(e.rdb, w, relayConfig("r1"))
		start(t, relay.Run)
		sink := newMemSink()
		e.startConsumer(t, e.consumerConfig("sink"), sink)

		const writers, each = 200, 15
		evs := spreadEvents(writers*each, 64)
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func(part []contract.Event) {
				defer wg.Done()
				for _, ev := range part {
					if err := push(context.Background(), e.rdb, ev); err != nil {
						errs <- err
						return
					}
				}
			}(evs[w*each : (w+1)*each])
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("push: %v", err)
		}
		waitRows(t, sink, len(evs))
		e.waitOutboxEmpty(t)
		sink.checkRows(t, evs)
		if _, recv := sink.counts(); recv != len(evs) {
			t.Errorf("sink received %d events, want %d", recv, len(evs))
		}
		e.logProducer(t, w, len(evs))
	})
}
