package loadgen_test

import (
	"strings"
	"testing"
	"time"

	"github.com/acv/acv/loadtest/loadgen"
)

// The environment of run.sh and run-k6.sh sets the scenarios: the shared thresholds override
// every scenario's defaults, DURATION sets the contention rounds that fit, and a malformed value
// is refused with its name.
func TestSettingsFromEnv(t *testing.T) {
	env := map[string]string{"DURATION": "1m30s", "P95_MS": "50", "REDEEM_RATE": "300", "VERIFY_SECS": "4", "MIX": "by_id:1,search:0"}
	s, err := loadgen.SettingsFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if s.Redeem.Duration != 90*time.Second || s.Redeem.Rate != 300 || s.Redeem.MaxVUs != 200 {
		t.Errorf("redeem: %+v", s.Redeem)
	}
	for name, l := range map[string]loadgen.Limits{"redeem": s.Redeem.Limits, "contention": s.Contention.Limits, "readmix": s.ReadMix.Limits} {
		if l.P95Ms != 50 || l.MaxFailedRate != 0 || l.MinChecksRate != 1 {
			t.Errorf("%s limits %+v, want p95 50 from P95_MS", name, l)
		}
	}
	if s.Contention.Limits.P99Ms != 2000 || s.ReadMix.Limits.P99Ms != 800 {
		t.Errorf("p99 defaults: contention %g, readmix %g; want 2000, 800", s.Contention.Limits.P99Ms, s.ReadMix.Limits.P99Ms)
	}
	if s.Contention.Rounds != 18 { // 90 s / (4 s + 1 s)
		t.Errorf("contention rounds %d, want 18", s.Contention.Rounds)
	}
	if len(s.ReadMix.Mix) != 2 || s.ReadMix.Mix[0].Name != "by_id" {
		t.Errorf("mix %+v", s.ReadMix.Mix)
	}
	env = map[string]string{"DURATION": "soon", "REDEEM_RATE": "many", "MIX": "nosuch:1"}
	_, err = loadgen.SettingsFromEnv(func(k string) string { return env[k] })
	for _, name := range []string{"DURATION", "REDEEM_RATE", "MIX"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("malformed %s: %v", name, err)
		}
	}
}
