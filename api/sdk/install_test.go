package sdk_test

import (
	"io/fs"
	"os/exec"
	"testing"

	"github.com/acv/acv/internal/testkit"
)

// sdkStatus is `git status` of api/sdk, ignored files included: an SDK install from the checkout
// must leave it as it was (no build/, *.egg-info, dist/ or other new file).
func sdkStatus(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("git", "status", "--porcelain", "--ignored", "--", "api/sdk")
	cmd.Dir = testkit.RepoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git status of api/sdk: %v", err)
	}
	return string(out)
}

// run runs a command in dir and fails the test with its output if it fails.
func run(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v in %s: %v\n%s", name, args, dir, err, out)
	}
}

func npmPath(t *testing.T) string {
	t.Helper()
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatalf("npm is not installed: run make test-deps (%v)", err)
	}
	return npm
}

// fileNames lists the regular files of fsys, sorted.
func fileNames(t *testing.T, fsys fs.FS) []string {
	t.Helper()
	var names []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			names = append(names, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}
