package testkit

import (
	"fmt"
	"os"
	"testing"

	"github.com/acv/acv/internal/settings"
)

// Report logs a figure line of a test and appends it, named after the test, to the timings
// file `make test` prints at the end (TimingsEnv): go test shows a passing test's log only
// with -v, and the figures are what a reader of the run wants.
func Report(tb testing.TB, format string, args ...any) {
	tb.Helper()
	line := fmt.Sprintf(format, args...)
	tb.Log(line)
	f := settings.Get(TimingsEnv)
	if f == "" {
		return
	}
	w, err := os.OpenFile(f, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer w.Close()
	fmt.Fprintf(w, "%s: %s\n", tb.Name(), line)
}
