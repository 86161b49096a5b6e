package testkit

import (
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/telemetry"
)

// secretLike matches what a secret or a signature looks like: 64 lowercase hex characters.
// Ids are 32, so nothing the service may log legitimately has this shape.
var secretLike = regexp.MustCompile(`[0-9a-f]{64}`)

// LogSink collects every log line of a stack's parts and fails the test on any line that
// carries a secret or a signature: every end-to-end test is also a check that logs leak none.
type LogSink struct {
	t     testing.TB
	mu    sync.Mutex
	lines []string
}

// NewLogSink returns a sink reporting to t and a JSON logger writing to it at debug level
// through the service's log handler, as production logs.
func NewLogSink(t testing.TB) (*LogSink, *slog.Logger) {
	s := &LogSink{t: t}
	h := slog.NewJSONHandler(s, &slog.HandlerOptions{Level: slog.LevelDebug})
	return s, slog.New(telemetry.LogHandler{Handler: h})
}

func (l *LogSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	line := string(p)
	if m := secretLike.FindString(line); m != "" {
		l.t.Errorf("a log line carries a secret or signature %q: %s", m, line)
	}
	l.lines = append(l.lines, strings.TrimSpace(line))
	return len(p), nil
}

// Lines returns the lines logged so far.
func (l *LogSink) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// SyncBuffer is a bytes.Buffer that a process (or goroutine) may write while the test reads
// it, e.g. a child server's output shown when the test fails.
type SyncBuffer = localenv.SyncBuffer
