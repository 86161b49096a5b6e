package faults_test

import (
	"context"
	"testing"
	"time"

	"github.com/acv/acv/internal/testkit"
)

// 1. The process running the relay — an API replica that relays too, as `acv serve` with its
// default roles does — is killed with SIGKILL under load, while its relay holds outbox entries
// it published and has not yet removed, and started again under the same instance name. Its
// in-flight verifies die with it; the other API replica keeps answering. After the restart the
// relay takes its outboxes back at once (its name is its previous run's, so it waits for no
// lease to run out) and reads them from the head; what it had published already is published
// again and the sink stores it once.
func TestRelayProcessKilled(t *testing.T) { eachKafka(t, testRelayProcessKilled) }

func testRelayProcessKilled(t *testing.T, version string) {
	d := newDeployment(t, testkit.RealKafka(t, version), "", 25_000)
	relaying := d.start("api-relay", "api,relay")
	other := d.start("api", "api")
	d.start("consumer", "consumer")
	w := watchOutbox(t, d)
	l := startLoad(t, d, d.clients(relaying, other))
	l.waitAcked(2000, 30*time.Second)

	// Kill the moment the relay holds published entries it has not removed yet.
	inFlight := waitHolding(t, relaying, 10*time.Second)
	killed := time.Now()
	relaying.Kill()
	left, err := outboxLength(context.Background(), d.s.Deps.Redis)
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
	report(t, "relay process killed holding %.0f published entries not yet removed (%d entries in the outbox after the kill), down %s; outbox peak %d; "+
		"everything acknowledged was logged %s after the restart; %s",
		inFlight, left, restarted.Sub(killed).Round(time.Millisecond), peak, caughtUp.Round(time.Millisecond), f)
	if f.Unanswered == 0 {
		t.Log("no verify was in flight on the killed replica")
	}
}

// waitHolding waits until the relay of svc holds entries it published and has not removed
// from the outbox yet (its published count is above its removed count), and returns how many.
func waitHolding(t *testing.T, svc *testkit.Service, within time.Duration) float64 {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		m, err := svc.Metrics()
		if err == nil {
			if n := m.Sum("acv_relay_published_total") - m.Sum("acv_relay_removed_total"); n > 0 {
				return n
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the relay held no published entry in %s under load (%v)", within, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
