package sdk_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/acv/acv/internal/testkit"
)

// TestTypeScriptSDK builds the TypeScript SDK (api/sdk/typescript) and runs its node:test suite
// against the live service: the unit tests of signing and retries, and the live tests through
// ACV_BASE_URL, ACV_PROXY_URL and ACV_FIXTURES_URL. `make test-deps` installs its npm packages.
// The suite builds and runs in a copy of the package, so the checkout is left as it was.
func TestTypeScriptSDK(t *testing.T) {
	dir := typeScriptCopy(t)
	live := startLive(t)

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	// `npm test` compiles src/ to dist/ and test/ to dist-test/ with tsc, then runs
	// `node --test` on the compiled tests.
	cmd := exec.CommandContext(ctx, npmPath(t), "test", "--silent")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), live.Env...)
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("npm test in a copy of the SDK (%s):\n%s", time.Since(start).Round(time.Millisecond), out)
	if err != nil {
		t.Fatalf("npm test: %v", err)
	}
}

// TestTypeScriptSDKDistIsCurrent holds that the committed dist/ is what `npm run build` makes of
// src/: an install from a checkout links or packs dist/ as it is, with no build step.
func TestTypeScriptSDKDistIsCurrent(t *testing.T) {
	copyDir := typeScriptCopy(t)
	run(t, copyDir, npmPath(t), "run", "build", "--silent")

	built, committed := os.DirFS(filepath.Join(copyDir, "dist")), os.DirFS(filepath.Join(typeScriptDir(t), "dist"))
	want, got := fileNames(t, built), fileNames(t, committed)
	if !slices.Equal(got, want) {
		t.Fatalf("api/sdk/typescript/dist holds %v, the build makes %v: run `npm run build` in api/sdk/typescript and commit dist/", got, want)
	}
	for _, name := range want {
		b, _ := fs.ReadFile(built, name)
		c, _ := fs.ReadFile(committed, name)
		if !bytes.Equal(b, c) {
			t.Errorf("api/sdk/typescript/dist/%s differs from the build of src/: run `npm run build` in api/sdk/typescript and commit dist/", name)
		}
	}
}

// TestTypeScriptSDKInstallsFromCheckout installs the SDK into a new project as the README says
// (`npm install /path/to/api/sdk/typescript`), imports both entry points, type-checks a use of
// the client against the shipped declarations, and holds that the checkout gained no file.
func TestTypeScriptSDKInstallsFromCheckout(t *testing.T) {
	sdk := typeScriptDir(t)
	npm := npmPath(t)
	before := sdkStatus(t)

	app := t.TempDir()
	if err := os.WriteFile(filepath.Join(app, "package.json"), []byte(`{"name": "app", "private": true, "type": "module"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, app, npm, "install", "--no-audit", "--no-fund", "--silent", sdk)
	run(t, app, "node", "--input-type=module", "-e", `
		const { Client, ApiError } = await import("@acv/client");
		const { CodeGateClient } = await import("@acv/client/codegate");
		for (const [name, v] of Object.entries({ Client, ApiError, CodeGateClient }))
			if (typeof v !== "function") throw new Error(name + " is " + typeof v);`)
	use := `import { Client, type VerifyResult } from "@acv/client";
const client = new Client({ baseUrl: "https://acv.example.com", apiKey: "k", apiSecret: "s", projectId: "p" });
export const result: Promise<VerifyResult> = client.verify("CODE");
`
	if err := os.WriteFile(filepath.Join(app, "use.ts"), []byte(use), 0o644); err != nil {
		t.Fatal(err)
	}
	tsc := filepath.Join(sdk, "node_modules", "typescript", "bin", "tsc")
	run(t, app, "node", tsc, "--noEmit", "--strict", "--target", "es2022", "--module", "nodenext", "--lib", "es2022,dom", "use.ts")

	if after := sdkStatus(t); after != before {
		t.Fatalf("installing the TypeScript SDK changed the checkout:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// typeScriptDir is the SDK's package in the checkout, with the npm packages `make test-deps`
// installs.
func typeScriptDir(t *testing.T) string {
	dir := filepath.Join(testkit.RepoRoot(t), "api", "sdk", "typescript")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "typescript")); err != nil {
		t.Fatalf("the TypeScript SDK's npm packages are not installed: run make test-deps (%v)", err)
	}
	return dir
}

// typeScriptCopy copies the SDK's sources and build settings to a temporary directory, linked
// to the checkout's node_modules, for a build whose output stays out of the checkout.
func typeScriptCopy(t *testing.T) string {
	sdk := typeScriptDir(t)
	dir := t.TempDir()
	for _, name := range []string{"src", "test"} {
		if err := os.CopyFS(filepath.Join(dir, name), os.DirFS(filepath.Join(sdk, name))); err != nil {
			t.Fatalf("copy the TypeScript SDK's %s: %v", name, err)
		}
	}
	for _, name := range []string{"package.json", "tsconfig.json", "tsconfig.test.json"} {
		b, err := os.ReadFile(filepath.Join(sdk, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(sdk, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return dir
}
