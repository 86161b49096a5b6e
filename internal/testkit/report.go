package testkit

import (
	"fmt"
	"testing"
)

// Report logs a figure line of a test and appends it, named after the test, to the timings
// file `make test` prints at the end (TimingsEnv).
func Report(tb testing.TB, format string, args ...any) {
	tb.Helper()
	line := fmt.Sprintf(format, args...)
	tb.Log(line)
	appendTimings(tb.Name() + ": " + line)
}
