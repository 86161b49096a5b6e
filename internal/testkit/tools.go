package testkit

import (
	"os"
	"path/filepath"
	"testing"
)

// RepoRoot is the checkout's top directory (the one holding go.mod), found from the test's
// working directory, so a test can reach files outside its package: the SDKs, the docs, the
// tools `make test-deps` installs.
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

// Tool is the path of a program `make test-deps` installs under .tools (the Python virtual
// environment's pytest and schemathesis, for example: rel is "venv/bin/pytest"). A missing tool
// fails the test with the command that installs it: the suites it drives are part of `make
// test`, never skipped.
func Tool(tb testing.TB, rel string) string {
	tb.Helper()
	p := filepath.Join(RepoRoot(tb), ".tools", rel)
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("%s is not installed: run `make test-deps` (%v)", rel, err)
	}
	return p
}
