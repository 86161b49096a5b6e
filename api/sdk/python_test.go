package sdk_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/acv/acv/internal/testkit"
)

// TestPythonSDK runs the Python SDK's pytest suite (api/sdk/python/tests) against the live
// service: a real API replica, the audit pipeline, the losing proxy and the fixtures endpoint.
// pytest comes from the virtual environment `make test-deps` installs, with the SDK installed
// in it as an editable package; its output is streamed to the test log line by line.
func TestPythonSDK(t *testing.T) {
	live := startLive(t)
	pytest := testkit.Tool(t, "venv/bin/pytest")
	dir := filepath.Join(testkit.RepoRoot(t), "api", "sdk", "python")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, pytest, "-q", "-p", "no:cacheprovider", filepath.Join(dir, "tests"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), live.Env...)
	// The suite needs no pytest plugin; the shared virtual environment holds others'
	// (schemathesis, hypothesis) whose loading only slows the start.
	cmd.Env = append(cmd.Env, "PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1")
	out := &pyLogWriter{t: t}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	err := cmd.Run()
	out.flush()
	if err != nil {
		t.Fatalf("pytest %s after %s: %v", dir, time.Since(start).Round(time.Millisecond), err)
	}
	t.Logf("pytest passed in %s", time.Since(start).Round(time.Millisecond))
}

// pyLogWriter writes a child's output to the test log a line at a time, as it comes.
type pyLogWriter struct {
	t   *testing.T
	mu  sync.Mutex
	buf []byte
}

func (w *pyLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.t.Log(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
}

func (w *pyLogWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.t.Log(string(w.buf))
		w.buf = nil
	}
}
