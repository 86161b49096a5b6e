package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/audit"
)

func TestOutboxKeyFormat(t *testing.T) {
	for shard, want := range map[int]string{0: "acv:{00}:outbox", 3: "acv:{03}:outbox", 15: "acv:{15}:outbox"} {
		if got := contract.OutboxKey(shard); got != want {
			t.Errorf("OutboxKey(%d) = %q, want %q", shard, got, want)
		}
	}
}

// Events on several shard streams reach the sink exactly once, keyed by code id in Kafka, and
// leave the outbox empty.
func TestPipelineDeliversEachEventOnce(t *testing.T) {
	e := newEnv(t, 4)
	evs := spreadEvents(300, 40)
	xaddAll(t, e.rdb, evs[:150])
	// One entry carries trace context, which must ride along as a Kafka header.
	traced := newEvent(contract.NewID(), contract.NewID(), 1)
	if err := xadd(context.Background(), e.rdb, traced, "h:traceparent", "00-abc-def-01"); err != nil {
		t.Fatal(err)
	}
	evs = append(evs, traced)

	n, age, err := audit.OutboxLen(context.Background(), e.rdb)
	if err != nil || n != 151 || age <= 0 {
		t.Fatalf("OutboxLen before relaying = %d, %s, %v; want 151 entries with an age", n, age, err)
	}

	relay := audit.NewRelay(e.rdb, e.writer(t), relayConfig("r1"))
	start(t, relay.Run)
	sink := newMemSink()
	c := e.startConsumer(t, e.consumerConfig("sink"), sink)
	xaddAll(t, e.rdb, evs[150:300]) // some while the relay runs

	waitRows(t, sink, len(evs))
	e.waitOutboxEmpty(t)
	sink.checkRows(t, evs)
	if _, recv := sink.counts(); recv != len(evs) {
		t.Errorf("sink received %d events, want %d (no fault, so no redelivery)", recv, len(evs))
	}

	byID := map[string]contract.Event{}
	for _, ev := range evs {
		byID[ev.ID] = ev
	}
	msgs := e.topicMessages(t)
	if len(msgs) != len(evs) {
		t.Fatalf("topic holds %d messages, want %d", len(msgs), len(evs))
	}
	for _, m := range msgs {
		var ev contract.Event
		if err := json.Unmarshal(m.Value, &ev); err != nil {
			t.Fatalf("message value is not an event: %v", err)
		}
		if string(m.Key) != byID[ev.ID].CodeID {
			t.Fatalf("message key %q, want code id %q", m.Key, byID[ev.ID].CodeID)
		}
		if ev.ID == traced.ID {
			if len(m.Headers) != 1 || m.Headers[0].Key != "traceparent" || string(m.Headers[0].Value) != "00-abc-def-01" {
				t.Errorf("traced message headers = %v", m.Headers)
			}
		} else if len(m.Headers) != 0 {
			t.Errorf("untraced message has headers %v", m.Headers)
		}
	}

	rs := relay.Stats()
	if rs.Published != int64(len(evs)) || rs.Removed != int64(len(evs)) || rs.Malformed != 0 {
		t.Errorf("relay stats %+v", rs)
	}
	eventually(t, 5*time.Second, "consumer stats", func() (bool, string) {
		cs := c.Stats()
		return cs.Applied == int64(len(evs)) && cs.Duplicates == 0 && !cs.LastCommit.IsZero(), fmt.Sprintf("%+v", cs)
	})
}

// Entries that are not events are reported, not fatal: one without the event field is removed
// (nothing to deliver), one with broken JSON is published unkeyed and skipped by the consumer.
func TestMalformedEntriesAreSkipped(t *testing.T) {
	e := newEnv(t, 2)
	ctx := context.Background()
	good := newEvent(contract.NewID(), contract.NewID(), 1)
	if err := e.rdb.XAdd(ctx, &redis.XAddArgs{Stream: contract.OutboxKey(1), Values: []any{"x", "1"}}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := e.rdb.XAdd(ctx, &redis.XAddArgs{Stream: contract.OutboxKey(2), Values: []any{audit.EventField, "{not json"}}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := xadd(ctx, e.rdb, good); err != nil {
		t.Fatal(err)
	}
	relay := audit.NewRelay(e.rdb, e.writer(t), relayConfig("r1"))
	start(t, relay.Run)
	sink := newMemSink()
	c := e.startConsumer(t, e.consumerConfig("sink"), sink)
	waitRows(t, sink, 1)
	e.waitOutboxEmpty(t)
	sink.checkRows(t, []contract.Event{good})
	if rs := relay.Stats(); rs.Malformed != 2 || rs.Published != 2 {
		t.Errorf("relay stats %+v, want 2 malformed, 2 published", rs)
	}
	eventually(t, 5*time.Second, "consumer counts the malformed message", func() (bool, string) {
		cs := c.Stats()
		return cs.Malformed == 1 && cs.Applied == 1, fmt.Sprintf("%+v", cs)
	})
}

// Events of one code reach the sink in version order: one key, one partition, one order.
func TestPerCodeOrder(t *testing.T) {
	e := newEnv(t, 8)
	const codes, versions = 20, 25
	type code struct{ project, id string }
	cs := make([]code, codes)
	for i := range cs {
		cs[i] = code{project: contract.NewID(), id: contract.NewID()}
		if i%4 != 0 {
			cs[i].project = cs[i-1].project // a few codes share a project, so a stream
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
	xaddAll(t, e.rdb, evs)

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
}

// Thousands of events appended by hundreds of concurrent writers while the relay runs all
// arrive, each once.
func TestConcurrentProducers(t *testing.T) {
	e := newEnv(t, 6)
	relay := audit.NewRelay(e.rdb, e.writer(t), relayConfig("r1"))
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
				if err := xadd(context.Background(), e.rdb, ev); err != nil {
					errs <- err
					return
				}
			}
		}(evs[w*each : (w+1)*each])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("xadd: %v", err)
	}
	waitRows(t, sink, len(evs))
	e.waitOutboxEmpty(t)
	sink.checkRows(t, evs)
	if _, recv := sink.counts(); recv != len(evs) {
		t.Errorf("sink received %d events, want %d", recv, len(evs))
	}
}
