package faults_test

import (
	"context"
	"testing"
	"time"

	"github.com/acv/acv/internal/testkit"
)

// 1. The process running the relay — an API replica that relays too, as `acv serve` with its
// default roles does — is killed with SIGKILL under load, while its relay holds outbox entries
// it read and has not yet removed (published or not), and started again under the same
// instance name. Its in-flight verifies die with it; the other API replica keeps answering.
// After the restart the relay re-reads its own pending entries first, so nothing stays pending
// and nothing waits for the claim timeout; what it had published already is published again
// and the sink stores it once.
func TestRelayProcessKilled(t *testing.T) { eachKafka(t, testRelayProcessKilled) }

func testRelayProcessKilled(t *testing.T, version string) {
	d := newDeployment(t, testkit.RealKafka(t, version), "", 25_000)
	relaying := d.start("api-relay", "api,relay")
	other := d.start("api", "api")
	d.start("consumer", "consumer")
	w := watchOutbox(t, d)
	l := startLoad(t, d, d.clients(relaying, other))
	l.waitAcked(2000, 30*time.Second)

	// Kill the moment the relay holds a batch: entries delivered to it and not yet removed.
	inFlight := d.waitPending(10 * time.Second)
	killed := time.Now()
	relaying.Kill()
	left, err := pendingEntries(context.Background(), d.s.Deps.Redis)
	if err != nil {
		t.Fatal(err)
	}
	l.run(2 * time.Second)
	relaying.Start()
	restarted := time.Now()
	caughtUp := d.waitLogged(l.ackedSoFar(), restarted, time.Minute)
	l.cover()
	l.run(3 * time.Second)

	f := d.settle(l)
	peak, _ := w.max()
	report(t, "relay process killed with %d outbox entries pending (%d left pending by the kill), down %s; outbox peak %d; "+
		"everything acknowledged was logged %s after the restart; %s",
		inFlight, left, restarted.Sub(killed).Round(time.Millisecond), peak, caughtUp.Round(time.Millisecond), f)
	if f.Unanswered == 0 {
		t.Log("no verify was in flight on the killed replica")
	}
}

// waitPending waits until some outbox entry is delivered to a relay and not yet removed, and
// returns how many are: a batch is in flight.
func (d *deployment) waitPending(within time.Duration) int64 {
	d.t.Helper()
	deadline := time.Now().Add(within)
	for {
		pending, err := pendingEntries(context.Background(), d.s.Deps.Redis)
		if err == nil && pending > 0 {
			return pending
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("no outbox entry was pending in %s under load (%v)", within, err)
		}
	}
}
