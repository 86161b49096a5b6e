package sdk_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acv/acv/internal/testkit"
)

// TestPythonSDK runs the Python SDK's pytest suite (api/sdk/python/tests) against the live
// service: a real API replica, the audit pipeline, the losing proxy and the fixtures endpoint.
// pytest comes from the virtual environment `make test-deps` installs and imports the SDK from
// src/ (pyproject.toml's pythonpath); its output is streamed to the test log line by line.
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

// TestPythonSDKInstallsFromCheckout installs the SDK from the checkout as the README says
// (`pip install ./api/sdk/python`, here into a target directory with the build backend of the
// tools' virtual environment, so no index is needed), imports it from the install, and holds
// that the checkout gained no file: no build/, no *.egg-info.
func TestPythonSDKInstallsFromCheckout(t *testing.T) {
	pip := testkit.Tool(t, "venv/bin/pip")
	python := testkit.Tool(t, "venv/bin/python")
	sdk := filepath.Join(testkit.RepoRoot(t), "api", "sdk", "python")
	before := sdkStatus(t)

	target := t.TempDir()
	run(t, target, pip, "install", "--quiet", "--disable-pip-version-check", "--no-build-isolation", "--no-deps", "--target", target, sdk)
	cmd := exec.Command(python, "-c", "import acv, acv.codegate, importlib.resources as r; print(acv.__file__); assert r.files(acv).joinpath('py.typed').is_file()")
	cmd.Dir = target
	cmd.Env = append(os.Environ(), "PYTHONPATH="+target, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("import the installed SDK: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); !strings.HasPrefix(got, target+string(filepath.Separator)) {
		t.Fatalf("acv was imported from %s, not from the install in %s", got, target)
	}

	if after := sdkStatus(t); after != before {
		t.Fatalf("installing the Python SDK changed the checkout:\nbefore:\n%s\nafter:\n%s", before, after)
	}
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
