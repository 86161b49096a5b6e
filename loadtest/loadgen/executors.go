package loadgen

import (
	"context"
	"math"
	"sync"
	"time"
)

// iterations is how many iterations an open model starts at rate per second in d: one every
// 1/rate seconds from the start, while the time is within d.
func iterations(rate float64, d time.Duration) int {
	if rate <= 0 || d <= 0 {
		return 0
	}
	return int(math.Ceil(rate*d.Seconds() - 1e-9))
}

// openModel runs fn at a fixed arrival rate, as k6's constant-arrival-rate executor does: the
// iterations(rate, d) iterations start on a timetable whatever the latency, each on a free VU
// (1 … maxVUs; a VU runs one iteration at a time), and one that is due while every VU is busy
// is dropped. iter counts the iterations started (0, 1, …). It returns once every started
// iteration finished, with the number dropped.
func openModel(ctx context.Context, rate float64, d time.Duration, maxVUs int, fn func(vu int, iter int64)) (dropped int64) {
	n := iterations(rate, d)
	if maxVUs < 1 {
		maxVUs = 1
	}
	free := make(chan int, maxVUs)
	for vu := 1; vu <= maxVUs; vu++ {
		free <- vu
	}
	interval := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	var wg sync.WaitGroup
	var started int64
	timer := time.NewTimer(0)
	defer timer.Stop()
	for i := 0; i < n; i++ {
		if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-ctx.Done():
				wg.Wait()
				return dropped
			}
		}
		select {
		case vu := <-free:
			iter := started
			started++
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { free <- vu }()
				fn(vu, iter)
			}()
		default:
			dropped++
		}
	}
	wg.Wait()
	return dropped
}

// closedModel runs vus VUs that each repeat fn back to back for d, as k6's constant-vus
// executor does; an iteration running when d ends finishes.
func closedModel(ctx context.Context, vus int, d time.Duration, fn func(vu int)) {
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for vu := 1; vu <= vus; vu++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && time.Now().Before(end) {
				fn(vu)
			}
		}()
	}
	wg.Wait()
}

// sleepUntil waits until t, or until ctx ends; it tells whether t came.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
