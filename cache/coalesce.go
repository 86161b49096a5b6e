package cache

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// coalescer sends script calls that arrive together in one pipeline. Under load, dozens of
// concurrent verifies then cost Redis and this process one write and one read each instead of
// one per request — on a loaded machine the syscalls, not the scripts, are the bill. A call that
// arrives alone is sent at once: nothing waits for company.
type coalescer struct {
	rdb      Redis
	wait     replicaWait
	calls    chan *scriptCall
	maxBatch int
	stop     chan struct{}
	wg       sync.WaitGroup
}

type scriptCall struct {
	script script
	keys   []string
	args   []interface{}
	reply  interface{}
	err    error
	done   chan struct{}
}

// batchTimeout bounds one pipeline's round trip, whatever the callers' deadlines.
const batchTimeout = 10 * time.Second

func newCoalescer(rdb Redis, wait replicaWait, workers, maxBatch int) *coalescer {
	c := &coalescer{rdb: rdb, wait: wait, calls: make(chan *scriptCall, workers*maxBatch), maxBatch: maxBatch, stop: make(chan struct{})}
	for i := 0; i < workers; i++ {
		c.wg.Add(1)
		go c.work()
	}
	return c
}

// run queues one call and waits for its reply or the caller's context. A call whose caller gave
// up may still run: like a command already on the wire, its effect stands.
func (c *coalescer) run(ctx context.Context, s script, keys []string, args ...interface{}) (interface{}, error) {
	call := &scriptCall{script: s, keys: keys, args: args, done: make(chan struct{})}
	select {
	case c.calls <- call:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case <-call.done:
		return call.reply, call.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *coalescer) work() {
	defer c.wg.Done()
	batch := make([]*scriptCall, 0, c.maxBatch)
	cmds := make([]*redis.Cmd, 0, c.maxBatch)
	for {
		select {
		case <-c.stop:
			return
		case first := <-c.calls:
			batch = append(batch[:0], first)
		}
	fill:
		for len(batch) < c.maxBatch {
			select {
			case call := <-c.calls:
				batch = append(batch, call)
			default:
				break fill
			}
		}
		c.send(batch, cmds[:0])
	}
}

func (c *coalescer) send(batch []*scriptCall, _ []*redis.Cmd) {
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	if len(batch) == 1 && c.wait.replicas == 0 {
		call := batch[0]
		call.reply, call.err = call.script.Run(ctx, c.rdb, call.keys, call.args...).Result()
		close(call.done)
		return
	}
	sendBatch(ctx, c.rdb, batch, c.wait)
	for _, call := range batch {
		close(call.done)
	}
}

func (c *coalescer) close() {
	close(c.stop)
	c.wg.Wait()
}
