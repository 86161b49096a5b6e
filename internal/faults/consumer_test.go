package faults_test

import (
	"context"
	"testing"
	"time"

	"github.com/acv/acv/internal/testkit"
)

// 2. The log writer (a consumer-only process) is killed with SIGKILL in the middle of a batch
// and started again, twice:
//
//   - first while it is provably inside a batch: the test holds a row lock on a code the load
//     is about to verify, so the batch carrying that code's event has written its log rows and
//     waits in the same transaction to update the code (PostgreSQL shows it waiting) when the
//     kill comes; the transaction dies with the process and the batch, never committed to
//     Kafka, is delivered again;
//   - then at an arbitrary moment of the load, where a batch written to PostgreSQL but not yet
//     committed to Kafka is delivered again and skipped by event id.
//
// The restarted writer joins the group again; the dead member's partitions come back after the
// session timeout (ACV_KAFKA_SESSION_TIMEOUT, 6 s here, not kafka-go's 30 s).
func TestConsumerKilledMidBatch(t *testing.T) { eachKafka(t, testConsumerKilledMidBatch) }

func testConsumerKilledMidBatch(t *testing.T, version string) {
	d := newDeployment(t, testkit.RealKafka(t, version), "", 25_000)
	api := d.start("api", "api")
	d.start("relay", "relay")
	writer := d.start("consumer", "consumer")
	d.waitGroup(1, time.Now(), time.Minute)
	l := startLoad(t, d, d.clients(api))
	l.waitAcked(1500, 30*time.Second)
	ctx := context.Background()

	// Kill 1: inside the batch's transaction.
	tx, err := d.s.Deps.Store.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }() // released below; this is for a test that fails first
	soon := d.codes[min(int(l.next.Load())+300, len(d.codes)-1)]
	if _, err := tx.Exec(ctx, `SELECT 1 FROM codes WHERE id = $1 FOR UPDATE`, d.codeIDs[soon]); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 30*time.Second, "the log writer to block inside its batch's transaction", func() (bool, string) {
		var n int
		err := d.s.Deps.Store.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND state = 'active'`).Scan(&n)
		return err == nil && n > 0, "no backend waits for a lock"
	})
	blocked, _ := writer.Metrics()
	writer.Kill()
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	writer.Start()
	rejoin1 := d.waitGroup(1, restarted, time.Minute)
	caught1 := d.waitLogged(l.ackedSoFar(), restarted, time.Minute)
	l.run(2 * time.Second)
	after1, _ := writer.Metrics()

	// Kill 2: wherever the writer is.
	writer.Kill()
	restarted = time.Now()
	writer.Start()
	rejoin2 := d.waitGroup(1, restarted, time.Minute)
	caught2 := d.waitLogged(l.ackedSoFar(), restarted, time.Minute)
	l.cover()
	l.run(2 * time.Second)
	after2, _ := writer.Metrics()

	f := d.settle(l)
	l.requireAllSucceeded("the log writer's deaths")
	const skipped = "acv_consumer_duplicates_skipped_total"
	report(t, "log writer killed inside a batch's transaction (it had written %.0f events): partitions back %s after the restart, "+
		"everything acknowledged logged %s after it, %.0f redelivered events skipped; killed again at random: partitions back %s, "+
		"everything logged %s after the restart, %.0f redelivered events skipped; %s",
		blocked.Sum("acv_consumer_events_written_total"), rejoin1.Round(time.Millisecond), caught1.Round(time.Millisecond),
		after1.Sum(skipped), rejoin2.Round(time.Millisecond), caught2.Round(time.Millisecond), after2.Sum(skipped), f)
}

// 5. A second log writer joins the group under load and, a few seconds later, leaves it
// (SIGTERM: it finishes its batch, commits and leaves the group): two rebalances, during which
// partitions change hands with batches in flight. Nothing is lost or doubled, and the second
// writer did write part of the logs.
func TestConsumerJoinsAndLeaves(t *testing.T) { eachKafka(t, testConsumerJoinsAndLeaves) }

func testConsumerJoinsAndLeaves(t *testing.T, version string) {
	d := newDeployment(t, testkit.RealKafka(t, version), "", 25_000)
	api := d.start("api", "api")
	d.start("relay", "relay")
	first := d.start("consumer-1", "consumer")
	d.waitGroup(1, time.Now(), time.Minute)
	l := startLoad(t, d, d.clients(api))
	l.waitAcked(1500, 30*time.Second)

	joined := time.Now()
	second := d.start("consumer-2", "consumer")
	join := d.waitGroup(2, joined, time.Minute)
	l.run(4 * time.Second)
	m2, err := second.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	left := time.Now()
	second.Stop()
	leave := d.waitGroup(1, left, time.Minute)
	caught := d.waitLogged(l.ackedSoFar(), left, time.Minute)
	l.cover()
	l.run(2 * time.Second)
	m1, err := first.Metrics()
	if err != nil {
		t.Fatal(err)
	}

	f := d.settle(l)
	l.requireAllSucceeded("the rebalances")
	const written, skipped = "acv_consumer_events_written_total", "acv_consumer_duplicates_skipped_total"
	if m2.Sum(written) == 0 {
		t.Errorf("the second writer wrote nothing in its %s in the group", time.Since(joined).Round(time.Second))
	}
	report(t, "second writer joined: rebalanced in %s; it left (SIGTERM): rebalanced in %s, everything acknowledged logged %s after the SIGTERM; "+
		"writer 1 wrote %.0f events (skipped %.0f redelivered), writer 2 wrote %.0f (skipped %.0f); %s",
		join.Round(time.Millisecond), leave.Round(time.Millisecond), caught.Round(time.Millisecond),
		m1.Sum(written), m1.Sum(skipped), m2.Sum(written), m2.Sum(skipped), f)
}
