package sdk_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/acv/acv/internal/testkit"
)

// TestTypeScriptSDK builds the TypeScript SDK (api/sdk/typescript) and runs its node:test suite
// against the live service: the unit tests of signing and retries, and the live tests through
// ACV_BASE_URL, ACV_PROXY_URL and ACV_FIXTURES_URL. `make test-deps` installs its npm packages.
func TestTypeScriptSDK(t *testing.T) {
	dir := filepath.Join(testkit.RepoRoot(t), "api", "sdk", "typescript")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "typescript")); err != nil {
		t.Fatalf("the TypeScript SDK's npm packages are not installed: run make test-deps (%v)", err)
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatalf("npm is not installed: run make test-deps (%v)", err)
	}
	live := startLive(t)

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	// `npm test` compiles src/ to dist/ and test/ to dist-test/ with tsc, then runs
	// `node --test` on the compiled tests.
	cmd := exec.CommandContext(ctx, npm, "test", "--silent")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), live.Env...)
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("npm test in %s (%s):\n%s", dir, time.Since(start).Round(time.Millisecond), out)
	if err != nil {
		t.Fatalf("npm test: %v", err)
	}
}
