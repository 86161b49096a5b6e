package deploy_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acv/acv/api/client"
	"github.com/acv/acv/api/contract"
)

// steadyLoad sends verifies at a fixed rate, round robin over the API replicas, whatever the
// answers and however long they take (up to maxInFlight at once): an open-loop load, so a
// slow dependency slows the answers, not the arrivals, as with real checkout traffic.
type steadyLoad struct {
	stop chan struct{}
	wg   sync.WaitGroup

	next, dropped atomic.Int64
	mu            sync.Mutex
	answers       map[string]int // "200", "503", "transport error", …
}

const maxInFlight = 64

// startSteadyLoad starts perSecond verifies a second of the codes, one after another and then
// again from the first (CODE_ALREADY_USED: still a verify, still a Redis round trip); it stops
// when the test ends or at stopLoad.
func startSteadyLoad(t *testing.T, clients []*client.Client, projectID string, codes []string, perSecond int) *steadyLoad {
	l := &steadyLoad{stop: make(chan struct{}), answers: map[string]int{}}
	by := "alerts-test"
	slots := make(chan struct{}, maxInFlight)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		tick := time.NewTicker(time.Second / time.Duration(perSecond))
		defer tick.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-tick.C:
			}
			select {
			case slots <- struct{}{}:
			default:
				l.dropped.Add(1)
				continue
			}
			n := l.next.Add(1)
			c := clients[int(n)%len(clients)]
			code := codes[int(n)%len(codes)]
			l.wg.Add(1)
			go func() {
				defer l.wg.Done()
				defer func() { <-slots }()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_, _, err := c.Verify(ctx, projectID, contract.VerifyRequest{Code: code, VerifiedBy: &by}, client.Options{})
				l.count(err)
			}()
		}
	}()
	t.Cleanup(l.stopLoad)
	return l
}

func (l *steadyLoad) count(err error) {
	answer := "200"
	var e *client.Error
	switch {
	case errors.As(err, &e):
		answer = fmt.Sprint(e.Status)
	case err != nil:
		answer = "transport error"
	}
	l.mu.Lock()
	l.answers[answer]++
	l.mu.Unlock()
}

// stopLoad stops sending and waits for the answers of what was sent; safe to call again.
func (l *steadyLoad) stopLoad() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

// tally counts the answers so far, by status, and resets the counts: what the load saw since
// the previous tally.
func (l *steadyLoad) tally() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	keys := make([]string, 0, len(l.answers))
	total := 0
	for k, n := range l.answers {
		keys = append(keys, fmt.Sprintf("%s: %d", k, n))
		total += n
	}
	sort.Strings(keys)
	l.answers = map[string]int{}
	return fmt.Sprintf("%d verifies answered (%s), %d not sent (%d already in flight)", total, strings.Join(keys, ", "), l.dropped.Swap(0), maxInFlight)
}
