package service_test

import (
	"strconv"
	"testing"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/audit"
	"github.com/acv/acv/internal/settings"
)

// The packages that name a default of their own for callers that build their configuration
// by hand (tests, the benchmark) name the one of internal/settings, so those callers run what
// acv serve runs.
func TestPackageDefaultsAreTheSettings(t *testing.T) {
	for name, pkg := range map[string]string{
		"ACV_KAFKA_TOPIC":   audit.Topic,
		"ACV_LOG_RETENTION": strconv.Itoa(contract.DefaultLogRetentionDays),
	} {
		if def := settings.Default(name); def != pkg {
			t.Errorf("%s: settings' default %q, the package's %q", name, def, pkg)
		}
	}
}
