package service

import (
	"context"
	"net"
	"time"
)

// Hooks are what a test changes in a run that production never does.
type Hooks struct {
	// RelayAfterPublish and ConsumerBeforeCommit inject faults into the relay and the consumer.
	RelayAfterPublish    func(entries []string) error
	ConsumerBeforeCommit func() error
	// KeyUseFlush is how often the API flushes its keys' last use, when above 0.
	KeyUseFlush time.Duration
}

// RunWithHooks is Run with h.
func RunWithHooks(ctx context.Context, cfg Config, ln net.Listener, h Hooks) error {
	return run(ctx, cfg, ln, runOptions{
		relayAfterPublish:    h.RelayAfterPublish,
		consumerBeforeCommit: h.ConsumerBeforeCommit,
		keyUseFlush:          h.KeyUseFlush,
	})
}
