package testkit

import (
	"testing"
	"time"
)

// WaitFor polls cond every 50 ms until it holds, and fails the test when it still does not
// after within, with what and cond's last account of the state. The stack is eventually
// consistent (the audit pipeline, the key cache), so tests wait for an outcome rather than
// sleep for a guess.
func WaitFor(t testing.TB, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %s", within, what, state)
		}
		time.Sleep(50 * time.Millisecond)
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
