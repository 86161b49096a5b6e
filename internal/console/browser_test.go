package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	acvclient "github.com/acv/acv/api/client"
	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/console"
	"github.com/acv/acv/internal/testkit"
	"github.com/acv/acv/store"
)

// chromiumPath is Debian's Chromium, which the browser suite drives (make test-deps installs
// it); Playwright downloads no browser of its own.
const chromiumPath = "/usr/bin/chromium"

// browserCodes is how many codes the suite generates from the page: the 100,000,
// lowered with ACV_BROWSER_CODES on a slow machine.
func browserCodes(t *testing.T) int {
	if v := os.Getenv("ACV_BROWSER_CODES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 10 {
			t.Fatalf("ACV_BROWSER_CODES=%q: want a number of at least 10", v)
		}
		return n
	}
	return 100_000
}

// TestConsoleInBrowser runs the operator console's browser suite (e2e/console.spec.js):
// Playwright driving Debian's headless Chromium against a real deployment (an API process
// serving the console beside the client API, the audit pipeline, PostgreSQL and Redis), with
// axe-core checking every page. Screenshots go to .acv/artifacts/console-e2e. Without chromium
// or node the test is skipped, unless ACV_REQUIRE_BROWSER is set (make test sets it).
func TestConsoleInBrowser(t *testing.T) {
	node, nodeErr := exec.LookPath("node")
	_, chromeErr := os.Stat(chromiumPath)
	if nodeErr != nil || chromeErr != nil {
		if os.Getenv("ACV_REQUIRE_BROWSER") == "" {
			t.Skipf("the browser suite needs node and %s (make test-deps installs them): node: %v, chromium: %v", chromiumPath, nodeErr, chromeErr)
		}
		t.Fatalf("ACV_REQUIRE_BROWSER is set but node or %s is missing: node: %v, chromium: %v", chromiumPath, nodeErr, chromeErr)
	}
	e2e, err := filepath.Abs("e2e")
	if err != nil {
		t.Fatal(err)
	}
	npmInstall(t, e2e)

	s := testkit.NewStack(t)
	s.StartPipeline("relay-1")
	ctx := context.Background()
	st, err := store.Open(ctx, s.Config.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	boot, err := console.NewService(console.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	// As `acv admin create` bootstraps them: one-time passwords, changed at the first login.
	root, err := boot.CreateAccount(ctx, console.SystemActor("cli:test"), "root", console.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	viewer, err := boot.CreateAccount(ctx, console.SystemActor("cli:test"), "vera", console.RoleViewer)
	if err != nil {
		t.Fatal(err)
	}
	apiURL, consoleURL := s.StartAPIWithConsole()
	testkit.WaitFor(t, 20*time.Second, "the console", func() (bool, string) {
		resp, err := http.Get(consoleURL + "/login")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})

	// The script verifies a code through the client API as a checkout system would: it hands
	// the key it created in the console to this helper, which signs with the Go client.
	helper := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b struct {
			KeyID, Secret, ProjectID, Code string
		}
		if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&b) != nil {
			http.Error(w, "POST {KeyID, Secret, ProjectID, Code}", http.StatusBadRequest)
			return
		}
		by := "checkout-e2e"
		c := &acvclient.Client{BaseURL: apiURL, KeyID: b.KeyID, Secret: b.Secret, HTTP: s.HTTP}
		res, _, err := c.Verify(r.Context(), b.ProjectID, contract.VerifyRequest{Code: b.Code, VerifiedBy: &by}, acvclient.Options{})
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(res)
	}))

	artifacts := artifactsDir(t)
	cmd := exec.Command(node, filepath.Join(e2e, "node_modules", "@playwright", "test", "cli.js"), "test", "--config", filepath.Join(e2e, "playwright.config.js"))
	cmd.Dir = e2e
	cmd.Env = append(os.Environ(),
		"CONSOLE_URL="+consoleURL, "HELPER_URL="+helper,
		"ROOT_USER=root", "ROOT_OTP="+root.OneTimePassword, "VIEWER_USER=vera", "VIEWER_OTP="+viewer.OneTimePassword,
		"CODE_COUNT="+strconv.Itoa(browserCodes(t)), "ARTIFACTS="+artifacts, "CHROMIUM="+chromiumPath,
		"PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1", "CI=1")
	out, err := cmd.CombinedOutput()
	t.Logf("playwright:\n%s", out)
	if err != nil {
		t.Fatalf("the browser suite failed (%v); screenshots and traces in %s", err, artifacts)
	}
	t.Logf("screenshots in %s", artifacts)
}

// npmInstall installs the suite's npm packages (package-lock.json) unless they are there.
func npmInstall(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@playwright", "test", "cli.js")); err == nil {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "@axe-core", "playwright")); err == nil {
			return
		}
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatalf("npm is needed to install the browser suite's packages: %v", err)
	}
	cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
}

// artifactsDir is where the suite's screenshots go: .acv/artifacts/console-e2e at the root of
// the module, emptied first.
func artifactsDir(t *testing.T) string {
	t.Helper()
	out := filepath.Join(testkit.RepoRoot(t), ".acv", "artifacts", "console-e2e")
	if err := os.RemoveAll(out); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	return out
}
