package audit

import (
	"testing"
	"time"
)

// The retry policy starts around retryMin, grows, never exceeds retryMax (jitter included) and
// starts over after Reset.
func TestBackOffPolicy(t *testing.T) {
	b := newBackOff()
	for round := 0; round < 2; round++ {
		if d := b.NextBackOff(); d < retryMin/2 || d > retryMin*3/2 {
			t.Fatalf("round %d: first delay %s, want about %s", round, d, retryMin)
		}
		var last time.Duration
		for i := 0; i < 200; i++ {
			last = b.NextBackOff()
			if last <= 0 || last > retryMax {
				t.Fatalf("round %d: delay %d is %s, want within (0, %s]", round, i+2, last, retryMax)
			}
		}
		if last < retryMax/4 {
			t.Fatalf("round %d: after 200 retries the delay is %s: it does not grow", round, last)
		}
		b.Reset()
	}
}
