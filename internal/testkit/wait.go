package testkit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/acv/acv/internal/localenv"
)

// WaitFor polls cond every 50 ms until it holds, and fails the test after within with what and
// cond's last state: the stack is eventually consistent, so tests wait rather than sleep.
func WaitFor(t testing.TB, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	err := localenv.Poll(context.Background(), within, 50*time.Millisecond, func() error {
		if ok, state := cond(); !ok {
			return errors.New(state)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("timed out after %s waiting for %s: %v", within, what, err)
	}
}

// Closed is a WaitFor condition that holds once ch is closed, for events a hook signals.
func Closed(ch <-chan struct{}) func() (bool, string) {
	return func() (bool, string) {
		select {
		case <-ch:
			return true, "closed"
		default:
			return false, "not yet"
		}
	}
}
