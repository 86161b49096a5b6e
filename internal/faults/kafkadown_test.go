package faults_test

import (
	"context"
	"testing"
	"time"

	"github.com/acv/acv/internal/testkit"
)

// 4. The whole Kafka cluster (three brokers) is stopped for 30 s under load, then started
// again. Verifies keep succeeding: their events wait in the Redis outbox, which grows by every
// verify of the outage. The pipeline worker says so: its /readyz answers 503 naming kafka, its
// acv_dependency_up{dependency="kafka"} is 0, and the series AcvKafkaUnreachable watches move
// as its expression needs (publish errors rising while nothing is published; the consumer
// group's lag series absent). When Kafka is back the relay publishes the backlog, the outbox
// drains and every acknowledged verify is logged once.
func TestKafkaClusterDown(t *testing.T) { eachKafka(t, testKafkaClusterDown) }

func testKafkaClusterDown(t *testing.T, version string) {
	k := testkit.KafkaCluster(t, version, 3)
	d := newDeployment(t, k, "", 60_000)
	r := outage(t, d, dependency{id: "kafka", name: "Kafka", stop: k.Stop, start: func() {
		if err := k.Start(context.Background()); err != nil {
			t.Fatalf("start Kafka again: %v", err)
		}
	}})
	api, worker, p := r.api, r.worker, r.p
	stopping, down, starting, back := r.stopping, r.down, r.starting, r.back

	// Every verify acknowledged while no broker ran was in the outbox when they came back.
	if r.held < r.ackedDuringOutage {
		t.Errorf("the outbox held %d entries after %s without Kafka, fewer than the %d verifies acknowledged meanwhile", r.held, outageLength, r.ackedDuringOutage)
	}
	during := p.of(worker, down, starting)
	// AcvKafkaUnreachable: publish errors rising while nothing is published, or no lag series.
	const published, errs, lag = "acv_relay_published_total", `acv_relay_errors_total{stage="publish"}`, "acv_consumer_lag_messages"
	alertFrom := time.Duration(-1)
	lagAbsent := 0
	for i := 1; i < len(during); i++ {
		a, b := during[i-1].Metrics, during[i].Metrics
		if !b.Has(lag) {
			lagAbsent++
		}
		if alertFrom < 0 && b[errs] > a[errs] && b.Sum(published) == a.Sum(published) {
			alertFrom = during[i].At.Sub(down)
		}
	}
	if alertFrom < 0 {
		t.Errorf("the relay's publish errors never rose while its publishes stood still during the outage")
	}
	// AcvOutboxStalled and AcvOutboxGrowing read the outbox gauges the relay process reports.
	if len(during) < 2 || during[len(during)-1].Metrics.Sum("acv_outbox_entries") <= during[0].Metrics.Sum("acv_outbox_entries") {
		t.Errorf("the worker's acv_outbox_entries did not grow during the outage")
	}
	if lagAbsent == 0 {
		t.Errorf("acv_consumer_lag_messages kept being reported with every broker down")
	}
	report(t, "%d brokers stopped (controlled shutdown took %s), down %s, started again in %s; %d verifies acknowledged during the outage, none failed; "+
		"outbox %d entries when Kafka returned, peak %d (oldest entry %.0f s), "+
		"everything acknowledged before its return logged %s after it, the outbox empty and every log written %s after it (load stopped 5 s after it); worker /readyz %s; AcvKafkaUnreachable's condition held from %s into the outage "+
		"(it fires after 2m of it), the lag series absent in %d of %d scrapes; API replica /readyz %s; %s",
		len(k.Nodes), down.Sub(stopping).Round(time.Millisecond), starting.Sub(down).Round(time.Millisecond), back.Sub(starting).Round(time.Millisecond),
		r.ackedDuringOutage, r.held, r.peak, maxOf(during, "acv_outbox_oldest_age_seconds"),
		r.caught.Round(time.Millisecond), r.f.DrainedAt.Sub(back).Round(time.Millisecond), readiness(p.of(worker, r.before, time.Now())), alertFrom.Round(time.Second),
		lagAbsent, len(during)-1, readiness(p.of(api, r.before, time.Now())), r.f)
}
