package main

import (
	"context"
	"testing"
)

// acvload scenario assumes no service: without a base URL (or any of the key, its secret, the
// project and the codes) it refuses to start, rather than load whatever answers on a default
// port.
func TestScenarioNeedsItsTarget(t *testing.T) {
	for _, name := range []string{"BASE_URL", "API_KEY", "API_SECRET", "PROJECT_ID", "CODES_FILE", "ACV_DEV_PROMETHEUS_TARGETS"} {
		t.Setenv(name, "")
	}
	if code := runScenarios(context.Background(), []string{"-key", "k", "-project", "p", "-codes", "codes.csv", "redeem"}); code != 2 {
		t.Errorf("without a base URL: exit %d, want 2", code)
	}
	if code := runScenarios(context.Background(), []string{"-base", "http://127.0.0.1:1", "nosuch"}); code != 2 {
		t.Errorf("an unknown scenario: exit %d, want 2", code)
	}
}
