package audit_test

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acv/acv/audit"
	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/testkit"
)

var errCrash = errors.New("simulated crash")

// A relay that dies between Kafka's acknowledgement and the outbox removal loses nothing: a
// restarted relay (same name: its outboxes back at once; another name: once the dead relay's
// lease ran out) publishes those entries again, and the sink's dedup leaves one row per event.
func TestRelayCrashAfterPublish(t *testing.T) {
	testkit.EachKafka(t, func(t *testing.T, k *localenv.Kafka) {
		for _, tc := range []struct {
			name        string
			restartName string
		}{
			{"restart with same name", "r1"},
			{"another replica takes over", "r2"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t, k, 4)
				evs := spreadEvents(400, 40)
				pushAll(t, e.rdb, evs)

				w := e.writer(t)
				cfg := relayConfig("r1")
				cfg.Batch = 20
				cfg.Lease = 600 * time.Millisecond
				cfg.AfterPublish = func([]string) error { return errCrash }
				dm, dreg := newMetrics()
				cfg.Metrics = dm
				dead := audit.NewRelay(e.rdb, w, cfg)
				err, stopped := start(t, dead.Run).wait(10 * time.Second)
				if !stopped {
					t.Fatal("relay did not stop on the hook error")
				}
				if !errors.Is(err, errCrash) {
					t.Fatalf("crashed relay returned %v, want the hook error", err)
				}
				if pub, rem := metricValue(t, dreg, "acv_relay_published_total"), metricValue(t, dreg, "acv_relay_removed_total"); pub == 0 || rem != 0 {
					t.Fatalf("crashed relay published %v, removed %v: want something published, nothing removed", pub, rem)
				}
				if n := outboxLen(t, e.rdb); n != int64(len(evs)) {
					t.Fatalf("outbox holds %d entries after the crash, want all %d", n, len(evs))
				}

				cfg = relayConfig(tc.restartName)
				cfg.Lease = 600 * time.Millisecond
				rm, rreg := newMetrics()
				cfg.Metrics = rm
				relay := audit.NewRelay(e.rdb, w, cfg)
				start(t, relay.Run)
				sink := newMemSink()
				ccfg := e.consumerConfig("sink")
				cm, creg := newMetrics()
				ccfg.Metrics = cm
				e.startConsumer(t, ccfg, sink)

				waitRows(t, sink, len(evs))
				e.waitOutboxEmpty(t)
				sink.checkRows(t, evs)
				if pub := metricValue(t, rreg, "acv_relay_published_total"); pub < float64(len(evs)) {
					t.Errorf("the restarted relay published %v entries, want every one of %d: what the dead one published is published again", pub, len(evs))
				}
				kafkaMsgs := len(e.topicMessages(t))
				if kafkaMsgs <= len(evs) {
					t.Errorf("topic holds %d messages, want duplicates beyond %d", kafkaMsgs, len(evs))
				}
				testkit.WaitFor(t, 10*time.Second, "every Kafka message reached the sink", func() (bool, string) {
					_, recv := sink.counts()
					dups := metricValue(t, creg, "acv_consumer_duplicates_skipped_total")
					return recv == kafkaMsgs && dups == float64(kafkaMsgs-len(evs)), fmt.Sprintf("received %d, %v duplicates skipped", recv, dups)
				})
			})
		}
	})
}

// A consumer that dies after the sink write but before committing offsets loses nothing: the
// restarted consumer gets the batch again and the sink skips the duplicates.
func TestConsumerCrashBeforeCommit(t *testing.T) {
	eachKafka(t, 4, func(t *testing.T, e *env) {
		evs := spreadEvents(300, 30)
		pushAll(t, e.rdb, evs)
		relay := audit.NewRelay(e.rdb, e.writer(t), relayConfig("r1"))
		start(t, relay.Run)

		sink := newMemSink()
		sink.fails = 2 // the sink is down at first: retried, never committed before it succeeds
		var hookCalls atomic.Int32
		cfg := e.consumerConfig("sink")
		cfg.BeforeCommit = func() error {
			hookCalls.Add(1)
			return errCrash
		}
		fm, freg := newMetrics()
		cfg.Metrics = fm
		first := audit.NewConsumer(cfg, sink)
		err, stopped := start(t, first.Run).wait(20 * time.Second)
		if !stopped {
			t.Fatal("consumer did not stop on the hook error")
		}
		if !errors.Is(err, errCrash) {
			t.Fatalf("crashed consumer returned %v, want the hook error", err)
		}
		// Failed fetches, writes and commits; decode counts skipped messages, not failures.
		retried := metricValue(t, freg, "acv_consumer_errors_total") - metricValue(t, freg, "acv_consumer_errors_total", "stage", "decode")
		lastCommit := metricValue(t, freg, "acv_consumer_last_commit_timestamp_seconds")
		if err := first.Close(); err != nil {
			t.Fatalf("close crashed consumer: %v", err)
		}
		stored, _ := sink.counts()
		if stored == 0 || hookCalls.Load() != 1 || retried < 2 || lastCommit != 0 {
			t.Fatalf("after the crash: %d rows, %d hook calls, %v errors, last commit %v", stored, hookCalls.Load(), retried, lastCommit)
		}

		ccfg := e.consumerConfig("sink")
		cm, creg := newMetrics()
		ccfg.Metrics = cm
		e.startConsumer(t, ccfg, sink)
		waitRows(t, sink, len(evs))
		e.waitOutboxEmpty(t)
		sink.checkRows(t, evs)
		testkit.WaitFor(t, 10*time.Second, "redelivered batch skipped as duplicates", func() (bool, string) {
			dups := metricValue(t, creg, "acv_consumer_duplicates_skipped_total")
			_, recv := sink.counts()
			return dups >= float64(stored) && recv == len(evs)+int(dups), fmt.Sprintf("%v duplicates skipped, received %d", dups, recv)
		})
	})
}
