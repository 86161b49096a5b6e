package console

import (
	"context"
	"sync"
)

// jobs runs the console's background work (generation batches) for the lifetime of a
// Service: a request starts a job and answers at once; Close stops the jobs still running and
// waits for them, so a batch interrupted by a shutdown records that it failed.
type jobs struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newJobs() *jobs {
	ctx, cancel := context.WithCancel(context.Background())
	return &jobs{ctx: ctx, cancel: cancel}
}

// start runs fn in the background with the jobs' context.
func (j *jobs) start(fn func(ctx context.Context)) {
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		fn(j.ctx)
	}()
}

// close cancels every job and waits until they have returned.
func (j *jobs) close() {
	j.cancel()
	j.wg.Wait()
}
