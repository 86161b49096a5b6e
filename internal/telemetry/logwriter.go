package telemetry

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// LogWriter buffers log output and writes it out every interval or when the buffer fills, so
// an access line per request does not cost a system call per request. Close flushes.
type LogWriter struct {
	mu   sync.Mutex
	w    *bufio.Writer
	stop chan struct{}
	done chan struct{}
}

// NewLogWriter buffers writes to w, flushing at least every interval.
func NewLogWriter(w io.Writer, interval time.Duration) *LogWriter {
	l := &LogWriter{w: bufio.NewWriterSize(w, 64<<10), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				l.Flush()
			case <-l.stop:
				l.Flush()
				return
			}
		}
	}()
	return l
}

// Write buffers p; a log record is one Write, so records never interleave.
func (l *LogWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Flush writes out what is buffered.
func (l *LogWriter) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = l.w.Flush()
}

// Close stops the flusher after a last flush.
func (l *LogWriter) Close() {
	close(l.stop)
	<-l.done
}
