package testkit

import (
	"os"
	"path/filepath"
	"testing"
)

// RepoRoot is the checkout's top directory (holding go.mod), for files outside the package.
func RepoRoot(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// Tool is the path of a program `make test-deps` installs under .tools (e.g.
// "venv/bin/pytest"); a missing one fails the test: those suites are never skipped.
func Tool(tb testing.TB, rel string) string {
	tb.Helper()
	p := filepath.Join(RepoRoot(tb), ".tools", rel)
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("%s is not installed: run `make test-deps` (%v)", rel, err)
	}
	return p
}
