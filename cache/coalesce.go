package cache

import (
	"context"
	"sync"
	"time"

	"github.com/acv/acv/internal/redisscript"
)

// coalescer sends script calls that arrive together in one pipeline. Under load, dozens of
// concurrent verifies then cost Redis and this process one write and one read each instead of
// one per request — on a loaded machine the syscalls, not the scripts, are the bill. A call that
// arrives alone is sent at once: nothing waits for company.
type coalescer struct {
	rdb      Redis
	wait     replicaWait
	calls    chan *queuedCall
	maxBatch int
	stop     chan struct{}
	wg       sync.WaitGroup
}

// queuedCall is a call waiting for its pipeline; done closes once it has its reply.
type queuedCall struct {
	redisscript.Call
	done chan struct{}
}

// batchTimeout bounds one pipeline's round trip, whatever the callers' deadlines.
const batchTimeout = 10 * time.Second

func newCoalescer(rdb Redis, wait replicaWait, workers, maxBatch int) *coalescer {
	c := &coalescer{rdb: rdb, wait: wait, calls: make(chan *queuedCall, workers*maxBatch), maxBatch: maxBatch, stop: make(chan struct{})}
	for i := 0; i < workers; i++ {
		c.wg.Add(1)
		go c.work()
	}
	return c
}

// run queues one call and waits for its reply or the caller's context. A call whose caller gave
// up may still run: like a command already on the wire, its effect stands.
func (c *coalescer) run(ctx context.Context, s *redisscript.Script, keys []string, args ...interface{}) (interface{}, error) {
	call := &queuedCall{Call: redisscript.Call{Script: s, Keys: keys, Args: args}, done: make(chan struct{})}
	select {
	case c.calls <- call:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case <-call.done:
		return call.Reply, call.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *coalescer) work() {
	defer c.wg.Done()
	queued := make([]*queuedCall, 0, c.maxBatch)
	batch := make([]*redisscript.Call, 0, c.maxBatch)
	for {
		select {
		case <-c.stop:
			return
		case first := <-c.calls:
			queued = append(queued[:0], first)
		}
	fill:
		for len(queued) < c.maxBatch {
			select {
			case call := <-c.calls:
				queued = append(queued, call)
			default:
				break fill
			}
		}
		batch = batch[:0]
		for _, q := range queued {
			batch = append(batch, &q.Call)
		}
		c.send(batch)
		for _, q := range queued {
			close(q.done)
		}
	}
}

// send sends one batch, on its own deadline: its callers' may differ.
func (c *coalescer) send(batch []*redisscript.Call) {
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	if len(batch) == 1 && c.wait.replicas == 0 {
		call := batch[0]
		call.Reply, call.Err = call.Script.Run(ctx, c.rdb, call.Keys, call.Args...)
		return
	}
	sendBatch(ctx, c.rdb, batch, c.wait)
}

func (c *coalescer) close() {
	close(c.stop)
	c.wg.Wait()
}
