package faults_test

import (
	"context"
	"testing"
	"time"

	"github.com/acv/acv/internal/testkit"
)

// 3. On a three-broker cluster (replication factor 3, min.insync.replicas=2), the leader of
// partition 0 of the log topic is killed with SIGKILL under load. The controller moves its
// partitions' leadership to a surviving in-sync replica; the relay, whose acks=all writes to
// those partitions fail meanwhile, finds the new leaders and keeps publishing (two in-sync
// replicas remain, so acks=all still succeeds), and the consumer follows. Nothing is lost or
// doubled; verifies never notice.
func TestKafkaLeaderKilled(t *testing.T) { eachKafka(t, testKafkaLeaderKilled) }

func testKafkaLeaderKilled(t *testing.T, version string) {
	k := testkit.KafkaCluster(t, version, 3)
	d := newDeployment(t, k, "", 25_000)
	api := d.start("api", "api")
	worker := d.start("worker", "relay,consumer")
	d.waitGroup(1, time.Now(), time.Minute)
	w := watchOutbox(t, d)
	l := startLoad(t, d, d.clients(api))
	l.waitAcked(1500, 30*time.Second)
	p := startProber(t, worker)
	l.run(2 * time.Second)

	ctx := context.Background()
	leader, err := k.Leader(ctx, d.topic(), 0)
	if err != nil {
		t.Fatal(err)
	}
	before, err := worker.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	leader.Kill()
	next, err := k.WaitNewLeader(ctx, d.topic(), 0, leader, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	changed := time.Since(killed)
	// The relay publishes again once a batch written after the change is acknowledged.
	var resumed time.Duration
	testkit.WaitFor(t, time.Minute, "the relay to publish after the leader change", func() (bool, string) {
		m, err := worker.Metrics()
		if err != nil {
			return false, err.Error()
		}
		last := m.Sum("acv_relay_last_publish_timestamp_seconds")
		resumed = time.Unix(0, int64(last*1e9)).Sub(killed)
		return resumed > changed, "no publish acknowledged since the leader change"
	})
	caught := d.waitLogged(l.ackedSoFar(), killed, time.Minute)
	l.cover()
	l.run(3 * time.Second)
	after, err := worker.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	p.halt()

	f := d.settle(l)
	l.requireAllSucceeded("the leader's death")
	peak, _ := w.max()
	const published, errs = "acv_relay_published_total", `acv_relay_errors_total{stage="publish"}`
	if after.Sum(published) <= before.Sum(published) {
		t.Errorf("the relay published nothing after the leader died")
	}
	report(t, "partition 0's leader, node %d, killed: node %d leads it %s later; the relay's first publish acknowledged after the change came %s after the kill "+
		"(%.0f failed publish attempts meanwhile); everything acknowledged by then logged %s after the kill; outbox peak %d; worker /readyz %s; %s",
		leader.ID, next.ID, changed.Round(time.Millisecond), resumed.Round(time.Millisecond), after[errs]-before[errs],
		caught.Round(time.Millisecond), peak, readiness(p.of(worker, killed, time.Now())), f)
}
