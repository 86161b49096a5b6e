package faults_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/testkit"
)

// probe is one look at a process from outside, as a load balancer and Prometheus take it:
// its /readyz and its /metrics.
type probe struct {
	At      time.Time
	Ready   testkit.Readiness
	Metrics localenv.Metrics
	Err     error
}

// prober looks at processes every second until stopped, keeping every probe.
type prober struct {
	mu     sync.Mutex
	probes map[*testkit.Service][]probe
	stop   chan struct{}
	done   chan struct{}
}

func startProber(t *testing.T, svcs ...*testkit.Service) *prober {
	p := &prober{probes: map[*testkit.Service][]probe{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			var wg sync.WaitGroup
			for _, s := range svcs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					pr := probe{At: time.Now()}
					pr.Ready, pr.Err = s.Ready()
					if pr.Err == nil {
						pr.Metrics, pr.Err = s.Metrics()
					}
					p.mu.Lock()
					p.probes[s] = append(p.probes[s], pr)
					p.mu.Unlock()
				}()
			}
			wg.Wait()
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(p.halt)
	return p
}

func (p *prober) halt() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
}

// of are the probes of s taken in [from, to).
func (p *prober) of(s *testkit.Service, from, to time.Time) []probe {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []probe
	for _, pr := range p.probes[s] {
		if !pr.At.Before(from) && pr.At.Before(to) && pr.Err == nil {
			out = append(out, pr)
		}
	}
	return out
}

// first is how long after from the first probe of s in [from, to) that satisfies cond was
// taken, and whether there was one.
func (p *prober) first(s *testkit.Service, from, to time.Time, cond func(probe) bool) (time.Duration, bool) {
	for _, pr := range p.of(s, from, to) {
		if cond(pr) {
			return pr.At.Sub(from), true
		}
	}
	return 0, false
}

// waitReady waits until the latest probe of s that answered says ready: the state before a
// fault.
func (p *prober) waitReady(t *testing.T, s *testkit.Service) {
	t.Helper()
	testkit.WaitFor(t, time.Minute, s.Name+" ready before the fault", func() (bool, string) {
		probes := p.of(s, time.Time{}, time.Now())
		return len(probes) > 0 && ready(probes[len(probes)-1]), "/readyz " + readiness(probes)
	})
}

// unready tells whether a probe's /readyz answered 503 naming dep unavailable.
func unready(dep string) func(probe) bool {
	return func(pr probe) bool { return pr.Ready.Status == 503 && pr.Ready.Checks[dep] == "unavailable" }
}

// ready tells whether a probe's /readyz answered 200.
func ready(pr probe) bool { return pr.Ready.Status == 200 }

// stayedReady checks that every probe of an API replica in [from, to) answered 200, and that
// at least one said dep was unavailable: the replica reports the shared dependency it can
// serve verifies without, and the load balancer keeps it.
func (p *prober) stayedReady(t *testing.T, s *testkit.Service, from, to time.Time, dep string) {
	t.Helper()
	probes := p.of(s, from, to)
	sawDown := false
	for _, pr := range probes {
		if pr.Ready.Status != 200 {
			t.Errorf("%s's /readyz answered %d while only %s was down: %s", s.Name, pr.Ready.Status, dep, readiness(probes))
			return
		}
		sawDown = sawDown || pr.Ready.Checks[dep] == "unavailable"
	}
	if !sawDown {
		t.Errorf("%s's /readyz never reported %s unavailable during its outage (%d probes)", s.Name, dep, len(probes))
	}
}

// depDown tells whether a probe's acv_dependency_up of dep was 0.
func depDown(dep string) func(probe) bool {
	return func(pr probe) bool {
		v, ok := pr.Metrics[fmt.Sprintf("acv_dependency_up{dependency=%q}", dep)]
		return ok && v == 0
	}
}

// maxOf is the largest value of a metric (summed over its series) among probes.
func maxOf(probes []probe, name string) float64 {
	var m float64
	for _, pr := range probes {
		m = max(m, pr.Metrics.Sum(name))
	}
	return m
}

// readiness says what /readyz answered in probes: "200" or "503 {checks}" for each distinct
// answer, in order.
func readiness(probes []probe) string {
	var out, last string
	for _, pr := range probes {
		s := fmt.Sprint(pr.Ready.Status)
		if pr.Ready.Status != 200 {
			s = fmt.Sprintf("%d %v", pr.Ready.Status, pr.Ready.Checks)
		}
		if s != last {
			if out != "" {
				out += " → "
			}
			out += s
			last = s
		}
	}
	return out
}
