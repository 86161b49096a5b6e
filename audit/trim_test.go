package audit_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/acv/acv/audit"
	"github.com/acv/acv/internal/testkit"
)

// A relay removes from an outbox only the prefix it published, and only while the outbox still
// starts with it: after another relay trimmed (a lease that passed on while this relay still
// believed it held it) or after a failover rebuilt the list, the trim is refused and nothing
// unpublished goes. Entries are unique, so "the same head" means "nothing removed since".
func TestTrimRemovesOnlyThePublishedPrefix(t *testing.T) {
	rdb := directRedis(t)
	ctx := context.Background()
	key := outboxKey(1)
	entries := func(from, to int) []string {
		var out []string
		for i := from; i < to; i++ {
			out = append(out, fmt.Sprintf("e%03d", i))
		}
		return out
	}
	list := func() []string {
		got, err := rdb.LRange(ctx, key, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if err := rdb.RPush(ctx, key, anys(entries(0, 10))...).Err(); err != nil {
		t.Fatal(err)
	}
	// Relay A published e000..e004; relay B then published e000..e009 and trimmed them, and
	// e010..e019 arrived.
	if ok, err := audit.Trim(ctx, rdb, key, "e000", "e009", 10); err != nil || !ok {
		t.Fatalf("B's trim: %v, %v", ok, err)
	}
	if err := rdb.RPush(ctx, key, anys(entries(10, 20))...).Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := audit.Trim(ctx, rdb, key, "e000", "e004", 5); err != nil || ok {
		t.Fatalf("A's stale trim: trimmed %v (%v), want refused", ok, err)
	}
	if got := list(); !slices.Equal(got, entries(10, 20)) {
		t.Fatalf("after the refused trim the outbox holds %q", got)
	}
	// A list rebuilt by a failover that lost its tail: the same head, another entry at n-1.
	if err := rdb.Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	rebuilt := append(entries(10, 13), "new-1", "new-2")
	if err := rdb.RPush(ctx, key, anys(rebuilt)...).Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := audit.Trim(ctx, rdb, key, "e010", "e014", 5); err != nil || ok {
		t.Fatalf("trim over a rebuilt tail: trimmed %v (%v), want refused", ok, err)
	}
	// The right prefix goes, and only it; the same trim again does nothing.
	if ok, err := audit.Trim(ctx, rdb, key, "e010", "e012", 3); err != nil || !ok {
		t.Fatalf("trim of the published prefix: %v, %v", ok, err)
	}
	if ok, err := audit.Trim(ctx, rdb, key, "e010", "e012", 3); err != nil || ok {
		t.Fatalf("the same trim again: trimmed %v (%v), want refused", ok, err)
	}
	if got := list(); !slices.Equal(got, []string{"new-1", "new-2"}) {
		t.Fatalf("after the trim the outbox holds %q", got)
	}
}

func anys(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// Relays share the outboxes: two relays each hold part of them and together deliver every
// event; when one stops, it gives its leases up and the other takes its outboxes at its next
// lease round, long before a lease would run out; a third joining takes a share from both.
func TestRelaysShareTheOutboxes(t *testing.T) {
	rdb := directRedis(t)
	sink := newMemSink()
	const lease = 3 * time.Second
	startRelay := func(name string) (*bg, func() (held, relays float64)) {
		m, reg := newMetrics()
		cfg := relayConfig(name)
		cfg.Lease = lease
		cfg.Metrics = m
		run := start(t, audit.NewRelay(rdb, &audit.SinkPublisher{Sink: sink}, cfg).Run)
		return run, func() (float64, float64) {
			return metricValue(t, reg, "acv_relay_outboxes_held"), metricValue(t, reg, "acv_relay_live_relays")
		}
	}
	_, aHeld := startRelay("relay-a")
	b, bHeld := startRelay("relay-b")
	testkit.WaitFor(t, 3*lease, "both relays hold a share", func() (bool, string) {
		ha, ra := aHeld()
		hb, rb := bHeld()
		return ha > 0 && hb > 0 && ha+hb == testShards && ra == 2 && rb == 2,
			fmt.Sprintf("relay-a holds %v (sees %v relays), relay-b %v (sees %v)", ha, ra, hb, rb)
	})
	evs := spreadEvents(400, 64)
	pushAll(t, rdb, evs[:200])
	waitRows(t, sink, 200)

	// relay-b stops: its outboxes pass to relay-a within a lease round, not a lease.
	stopped := time.Now()
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, lease, "relay-a holds every outbox", func() (bool, string) {
		h, r := aHeld()
		return h == testShards && r == 1, fmt.Sprintf("relay-a holds %v, sees %v relays", h, r)
	})
	took := time.Since(stopped)
	pushAll(t, rdb, evs[200:300])
	waitRows(t, sink, 300)

	// relay-c joins and takes a share from relay-a.
	_, cHeld := startRelay("relay-c")
	testkit.WaitFor(t, 3*lease, "relay-c holds a share", func() (bool, string) {
		ha, _ := aHeld()
		hc, rc := cHeld()
		return hc > 0 && ha+hc == testShards && rc == 2, fmt.Sprintf("relay-a %v, relay-c %v (sees %v)", ha, hc, rc)
	})
	pushAll(t, rdb, evs[300:])
	waitRows(t, sink, len(evs))
	waitOutboxEmpty(t, rdb)
	sink.checkRows(t, evs)
	t.Logf("relay-b's outboxes taken over %s after it stopped (lease %s)", took.Round(time.Millisecond), lease)
}
