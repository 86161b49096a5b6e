package console

import (
	"context"
	"sync"

	"github.com/acv/acv/api/contract"
)

// jobs runs the console's background work (generation batches) for the lifetime of a
// Service: a request starts a job and answers at once; close stops the jobs still running and
// waits for them, so a batch interrupted by a shutdown records that it failed.
type jobs struct {
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

func newJobs() *jobs {
	ctx, cancel := context.WithCancel(context.Background())
	return &jobs{ctx: ctx, cancel: cancel}
}

// errShuttingDown refuses a job asked for while the console stops.
var errShuttingDown = contract.Errorf(contract.KindUnavailable, "the console is shutting down")

// start runs fn in the background with the jobs' context; errShuttingDown once close began.
func (j *jobs) start(fn func(ctx context.Context)) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return errShuttingDown
	}
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		fn(j.ctx)
	}()
	return nil
}

// close cancels every job and waits until they have returned. It may be called more than once.
func (j *jobs) close() {
	j.mu.Lock()
	j.closed = true
	j.mu.Unlock()
	j.cancel()
	j.wg.Wait()
}
