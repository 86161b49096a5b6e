package service_test

import (
	"bytes"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/acv/acv/internal/telemetry"
)

// secretLike matches what a secret or a signature looks like: 64 lowercase hex characters.
// Ids are 32, so nothing the service may log legitimately has this shape.
var secretLike = regexp.MustCompile(`[0-9a-f]{64}`)

// logSink collects every log line of a stack's parts and fails the test on any line that
// carries a secret or a signature.
type logSink struct {
	t     *testing.T
	mu    sync.Mutex
	buf   bytes.Buffer
	lines []string
}

func (l *logSink) Write(p []byte) (int, error) {
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
func (l *logSink) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

func newLogSink(t *testing.T) (*logSink, *slog.Logger) {
	s := &logSink{t: t}
	h := slog.NewJSONHandler(s, &slog.HandlerOptions{Level: slog.LevelDebug})
	return s, slog.New(telemetry.LogHandler{Handler: h})
}
