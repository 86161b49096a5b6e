package faults_test

import (
	"context"
	"testing"
	"time"

	"github.com/acv/acv/internal/testkit"
)

// outageLength is how long Kafka, or PostgreSQL, stays down in the outage tests.
const outageLength = 30 * time.Second

// dependency is what an outage test takes down.
type dependency struct {
	// id names it in /readyz and in acv_dependency_up ("kafka"); name in prose ("Kafka").
	id, name string
	// stop takes it down; start brings it back, on the same addresses.
	stop, start func()
}

// outageRun is what one outage test saw, for its assertions and its report: the processes and
// the watchers it ran, the moments the outage began and ended, and the pipeline's figures
// after it.
type outageRun struct {
	api, worker *testkit.Service
	l           *load
	p           *prober

	// before is when the load had run a while and the worker was about to be found ready.
	before time.Time
	// stopping is when the dependency was told to stop, down when the stop returned, starting
	// when it was told to start again and back when it answered again.
	stopping, down, starting, back time.Time
	// ackedDuringOutage counts the verifies acknowledged while the dependency was down.
	ackedDuringOutage int64
	// held is the outbox's length at the end of the outage, just before the start.
	held int64
	// caught is how long after back everything acknowledged by then was logged.
	caught time.Duration
	f      figures
	// peak is the outbox's longest length over the whole test.
	peak int64
}

// outage runs the outage tests' one sequence, so the Kafka and the PostgreSQL outages are the
// same experiment on different dependencies: an API replica and a pipeline worker under load,
// probed every second; dep is stopped for outageLength and started again; the load runs 5 s
// more, then everything acknowledged must be logged once and every verify must have succeeded.
// Both processes must have said so meanwhile: the worker's /readyz answered 503 naming dep and
// its acv_dependency_up of dep went to 0, the API replica's /readyz named dep unavailable and
// still answered 200 (it serves verifies without it), and the worker was ready again after.
func outage(t *testing.T, d *deployment, dep dependency) outageRun {
	t.Helper()
	var r outageRun
	// The API replica runs as the compose file configures it, KAFKA_BROKERS included.
	r.api = d.start("api", "api")
	r.worker = d.start("worker", "relay,consumer")
	d.waitGroup(1, time.Now(), time.Minute)
	w := watchOutbox(t, d)
	r.l = startLoad(t, d, d.clients(r.api))
	r.l.waitAcked(1500, 30*time.Second)
	r.p = startProber(t, r.worker, r.api)
	r.l.run(3 * time.Second)
	r.before = time.Now()
	r.p.waitReady(t, r.worker)

	r.stopping = time.Now()
	dep.stop()
	r.down = time.Now()
	ackedAtDown := r.l.ackedN.Load()
	time.Sleep(outageLength)
	r.ackedDuringOutage = r.l.ackedN.Load() - ackedAtDown
	held, err := outboxLength(context.Background(), d.s.Deps.Redis)
	if err != nil {
		t.Fatal(err)
	}
	r.held = held
	r.starting = time.Now()
	dep.start()
	r.back = time.Now()
	r.l.cover()
	ackedAtReturn := r.l.ackedSoFar()
	r.l.run(5 * time.Second)
	r.l.finish()
	r.caught = d.waitLogged(ackedAtReturn, r.back, 2*time.Minute)
	r.p.halt()

	r.f = d.settle(r.l)
	r.l.requireAllSucceeded("the " + dep.name + " outage")
	r.peak, _ = w.max()

	if _, ok := r.p.first(r.worker, r.stopping, r.starting, unready(dep.id)); !ok {
		t.Errorf("the worker's /readyz never said %s was unavailable during the outage: %s", dep.id, readiness(r.p.of(r.worker, r.down, r.starting)))
	}
	r.p.stayedReady(t, r.api, r.down, r.starting, dep.id)
	if _, ok := r.p.first(r.worker, r.down, r.starting, depDown(dep.id)); !ok {
		t.Errorf("the worker's acv_dependency_up{dependency=%q} never went to 0 during the outage", dep.id)
	}
	if _, ok := r.p.first(r.worker, r.back, time.Now(), ready); !ok {
		t.Errorf("the worker's /readyz did not answer 200 after %s returned: %s", dep.name, readiness(r.p.of(r.worker, r.back, time.Now())))
	}
	return r
}
