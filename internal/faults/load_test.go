package faults_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acv/acv/api/client"
	"github.com/acv/acv/api/contract"
)

// The load: loadWorkers goroutines verify distinct codes, each code once, in bursts of
// loadBurst requests every loadTick, so hundreds of signed verifies are in flight at once
// while the rate (loadBurst per loadTick, 500/s) leaves the two cores room for the brokers, the
// databases and the processes under test.
const (
	loadWorkers = 256
	loadBurst   = 250
	loadTick    = 500 * time.Millisecond
)

// load drives concurrent signed verifies of the deployment's codes at API processes and
// records every answer: the codes answered success=true (acknowledged: each must end with
// exactly one success row), those answered otherwise, and those sent without an answer (the
// process died, the connection broke), whose fate Redis tells.
type load struct {
	t       *testing.T
	d       *deployment
	clients []*client.Client
	next    atomic.Int64
	stop    chan struct{}
	wg      sync.WaitGroup
	started time.Time

	mu         sync.Mutex
	acked      []string // code values answered success=true
	refused    []string // answered success=false
	unanswered []string // sent, no answer
	firstErr   error
	covered    time.Time // see cover
	ackedN     atomic.Int64
	failedN    atomic.Int64
	// exhausted is when the codes ran out (Unix ns), 0 while they last.
	exhausted atomic.Int64
}

// startLoad starts verifying the deployment's codes, in order, at the clients' processes;
// worker w sends through client w mod len(clients).
func startLoad(t *testing.T, d *deployment, clients []*client.Client) *load {
	l := &load{t: t, d: d, clients: clients, stop: make(chan struct{}), started: time.Now()}
	tokens := make(chan struct{}, loadBurst)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		tick := time.NewTicker(loadTick)
		defer tick.Stop()
		for {
			for range loadBurst {
				select {
				case tokens <- struct{}{}:
				default:
				}
			}
			select {
			case <-l.stop:
				return
			case <-tick.C:
			}
		}
	}()
	by := "faults"
	for w := range loadWorkers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			c := clients[w%len(clients)]
			for {
				select {
				case <-l.stop:
					return
				case <-tokens:
				}
				i := int(l.next.Add(1) - 1)
				if i >= len(d.codes) {
					l.exhausted.CompareAndSwap(0, time.Now().UnixNano())
					return
				}
				code := d.codes[i]
				res, _, err := c.Verify(context.Background(), d.projectID, contract.VerifyRequest{Code: code, VerifiedBy: &by}, client.Options{})
				l.record(code, res, err)
				if err != nil {
					// The process may be down: do not burn codes faster than it comes back.
					select {
					case <-l.stop:
						return
					case <-time.After(100 * time.Millisecond):
					}
				}
			}
		}()
	}
	t.Cleanup(l.halt)
	return l
}

func (l *load) record(code string, res contract.VerifyResponse, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err != nil:
		l.unanswered = append(l.unanswered, code)
		l.failedN.Add(1)
		if l.firstErr == nil {
			l.firstErr = fmt.Errorf("verify %s at %s: %w", code, time.Now().Format("15:04:05.000"), err)
		}
	case res.Success:
		l.acked = append(l.acked, code)
		l.ackedN.Add(1)
	default:
		l.refused = append(l.refused, code)
		l.failedN.Add(1)
		if l.firstErr == nil {
			l.firstErr = fmt.Errorf("verify %s answered success=false: %s", code, res.Message)
		}
	}
}

// halt stops the load and waits for the requests in flight; later calls do nothing.
func (l *load) halt() {
	select {
	case <-l.stop:
		return
	default:
	}
	close(l.stop)
	l.wg.Wait()
}

// cover records that the load must have lasted until now: the fault it runs under has ended.
// finish fails the test when the codes ran out before.
func (l *load) cover() {
	l.mu.Lock()
	l.covered = time.Now()
	l.mu.Unlock()
}

// finish stops the load and fails the test when the codes ran out before the moment cover
// marked, or before now when cover was not called: the test's budget was too small for the
// fault it measured. (Running out afterwards only thins the load's tail.)
func (l *load) finish() {
	l.t.Helper()
	l.halt()
	l.mu.Lock()
	need := l.covered
	l.mu.Unlock()
	if need.IsZero() {
		need = time.Now()
	}
	if at := l.exhausted.Load(); at != 0 && time.Unix(0, at).Before(need) {
		l.t.Errorf("the load ran out of its %d codes %s before the fault ended: raise the test's code budget",
			len(l.d.codes), need.Sub(time.Unix(0, at)).Round(time.Millisecond))
	}
}

// waitAcked waits until at least n verifies were acknowledged.
func (l *load) waitAcked(n int64, within time.Duration) {
	l.t.Helper()
	deadline := time.Now().Add(within)
	for l.ackedN.Load() < n {
		if time.Now().After(deadline) {
			l.t.Fatalf("only %d verifies acknowledged %s into the load (want %d); first failure: %v",
				l.ackedN.Load(), within, n, l.err())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// run lets the load go on for d.
func (l *load) run(d time.Duration) { time.Sleep(d) }

// ackedSoFar are the codes acknowledged until now.
func (l *load) ackedSoFar() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.acked...)
}

// err is the first failed verify, or nil.
func (l *load) err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.firstErr
}

// requireAllSucceeded fails the test when any verify was not answered success=true: a fault
// the outbox must absorb may not show to clients.
func (l *load) requireAllSucceeded(fault string) {
	l.t.Helper()
	if n := l.failedN.Load(); n > 0 {
		l.t.Errorf("%d of %d verifies failed during %s; first: %v", n, n+l.ackedN.Load(), fault, l.err())
	}
}
