package main

import (
	"context"
	"testing"

	"github.com/acv/acv/internal/settings"
	"github.com/acv/acv/loadtest/loadgen"
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

// Every variable the load generator reads has a row in internal/settings: settings.Get panics
// on a name without one, so a scenario setting added without its row fails here, not in a run.
func TestEveryScenarioSettingHasARow(t *testing.T) {
	t.Setenv("REDEEM_RATE", "7")
	s, err := loadgen.SettingsFromEnv(settings.Get)
	if err != nil {
		t.Fatal(err)
	}
	if s.Redeem.Rate != 7 {
		t.Errorf("REDEEM_RATE=7 read as %v", s.Redeem.Rate)
	}
}
