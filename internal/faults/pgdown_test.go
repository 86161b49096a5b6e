package faults_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/acv/acv/internal/testkit"
)

// 6. PostgreSQL is killed (as `pg_ctl stop -m immediate` or a crash does) under load, kept down
// for 30 s, and started again. Verifies keep succeeding: they need Redis only (the codes and the
// API keys' mirror are there). The relay keeps publishing to Kafka, so the outbox stays small;
// the log writer's batches fail and are retried, the events waiting in Kafka (the group's lag
// grows). The worker says so: /readyz 503 naming postgres, acv_dependency_up{dependency=
// "postgres"} 0, and write errors with nothing written (AcvPostgresUnreachable's expression).
// When PostgreSQL is back the writer catches up and every acknowledged verify is logged once.
func TestPostgresDown(t *testing.T) { eachKafka(t, testPostgresDown) }

func testPostgresDown(t *testing.T, version string) {
	pg := testkit.StartOwnPostgres(t)
	d := newDeployment(t, testkit.RealKafka(t, version), pg.URL(), 40_000)
	r := outage(t, d, dependency{id: "postgres", name: "PostgreSQL", stop: pg.Kill, start: pg.Start})
	api, worker, p := r.api, r.worker, r.p
	// PostgreSQL is down from the moment it is killed: an immediate stop has no shutdown.
	down, starting, back := r.stopping, r.starting, r.back
	during := p.of(worker, down, starting)

	// AcvPostgresUnreachable's second sign: write errors rising while nothing is written.
	const written, writeErrs, lag = "acv_consumer_events_written_total", `acv_consumer_errors_total{stage="write"}`, "acv_consumer_lag_messages"
	stalled, seen := false, "no two samples"
	if len(during) > 1 {
		a, b := during[0].Metrics, during[len(during)-1].Metrics
		stalled = b[writeErrs] > a[writeErrs] && b[written] == a[written]
		seen = fmt.Sprintf("%d samples: write errors %.0f → %.0f, written %.0f → %.0f",
			len(during), a[writeErrs], b[writeErrs], a[written], b[written])
	}
	if !stalled {
		t.Errorf("the log writer's write errors did not rise with nothing written during the outage (%s)", seen)
	}
	report(t, "PostgreSQL killed, down %s, started again in %s; %d verifies acknowledged during the outage, none failed; "+
		"consumer lag peak %.0f messages, outbox peak %d; everything acknowledged before its return logged %s after it, "+
		"the pipeline drained %s after it (load stopped 5 s after it); worker /readyz %s; API replica /readyz %s; %s",
		starting.Sub(down).Round(time.Millisecond), back.Sub(starting).Round(time.Millisecond), r.ackedDuringOutage,
		maxOf(during, lag), r.peak, r.caught.Round(time.Millisecond), r.f.DrainedAt.Sub(back).Round(time.Millisecond),
		readiness(p.of(worker, down.Add(-time.Second), time.Now())), readiness(p.of(api, down.Add(-time.Second), time.Now())), r.f)
}
