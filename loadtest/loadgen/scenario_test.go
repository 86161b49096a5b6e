package loadgen_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/acv/acv/internal/testkit"
	"github.com/acv/acv/loadtest/loadgen"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// The four scenarios of make loadtest, run for a second or two each against a whole stack
// (API replica, relay and log writer on real Redis and PostgreSQL): each must run, judge every
// threshold its k6 script sets, pass on a healthy service, and count its requests in its own
// metrics. Redeem's audit check must have read back every successful verify and found exactly
// one log each; PostgreSQL, asked directly, must hold exactly one success log per success.
func TestScenariosAgainstAStack(t *testing.T) {
	s := testkit.NewStack(t)
	base := s.StartAPI()
	s.StartPipeline("relay-1")
	tn := s.NewTenant(nil)

	// Latency is the benchmarks' to measure: on a shared machine under -race a healthy stack can
	// answer slowly, so the latency limits here are wide; the readmix run below shows a tight one
	// is judged and fails.
	settings, err := loadgen.SettingsFromEnv(func(name string) string {
		return map[string]string{"P95_MS": "30000", "P99_MS": "60000"}[name]
	})
	if err != nil {
		t.Fatal(err)
	}
	settings.Redeem.Rate, settings.Redeem.Duration, settings.Redeem.Prefix = 20, 2*time.Second, "R-"
	settings.Contention.VUs, settings.Contention.Rounds, settings.Contention.Prefix = 10, 1, "C-"
	settings.Contention.VerifyPhase, settings.Contention.ReactivatePhase = time.Second, time.Second
	settings.Reactivate.VUs, settings.Reactivate.CodesPerVU, settings.Reactivate.Duration, settings.Reactivate.Prefix = 4, 3, 2*time.Second, "A-"
	settings.Reactivate.ReadBack = 0.5
	settings.ReadMix.Rate, settings.ReadMix.Duration = 20, 2*time.Second
	importCodes(s, tn.ProjectID, "R-", 50)
	importCodes(s, tn.ProjectID, "C-", settings.Contention.Codes)
	importCodes(s, tn.ProjectID, "A-", 12)
	// Values that need percent-encoding in a path and a query, and LIKE wildcards.
	importCodes(s, tn.ProjectID, "x a+b/c%d_e?f#g&h=ü-", 20)

	reg := prometheus.NewRegistry()
	r := &loadgen.Runner{
		Target:   loadgen.Target{BaseURL: base, KeyID: tn.Key.ID, Secret: tn.Key.Secret, ProjectID: tn.ProjectID},
		Codes:    exportCodes(t, s, tn.ProjectID),
		Settings: settings,
		Metrics:  loadgen.NewMetrics(reg),
		Log:      testLog{t},
		HTTP:     s.HTTP, // checks every answer against api/openapi.yaml too
	}
	// The thresholds of each k6 script (besides the standard ones every scenario has).
	want := map[string][]string{
		"redeem":     {"unexpected_failures", "audit_log_missing", "audit_log_duplicated", "dropped_iterations"},
		"contention": {"unexpected_failures", "phase_overrun", "verifier_iterations_completed", "redeem_success", "reactivate_success", "redeem_success{round:0,code:4}"},
		"reactivate": {"unexpected_failures", "cycles_ok"},
		"readmix":    {"unexpected_failures", "dropped_iterations", "http_req_duration{endpoint:by_code}", "http_req_duration{endpoint:search}"},
	}
	standard := []string{"http_req_duration{phase:load}", "http_req_failed{phase:load}", "checks{phase:load}", "http_reqs{phase:load}"}
	ctx := context.Background()
	for _, name := range loadgen.Scenarios {
		res, err := r.Run(ctx, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		judged := map[string]bool{}
		for _, th := range res.Thresholds {
			judged[th.Metric] = true
		}
		for _, m := range append(standard, want[name]...) {
			if !judged[m] {
				t.Errorf("%s judged no threshold on %s", name, m)
			}
		}
		if !res.Passed() || res.Requests == 0 {
			t.Errorf("%s failed on a healthy stack:\n%s", name, res.Summary())
		}
		if got := counterSum(t, reg, "acv_loadtest_requests_total", name); got < float64(res.Requests) {
			t.Errorf("%s: acv_loadtest_requests_total counts %g requests, the load phase alone sent %d", name, got, res.Requests)
		}
		if name == "redeem" {
			ok := res.Counters["redeem_success"]
			if ok == 0 || res.Counters["audit_checked"] != ok {
				t.Errorf("redeem: %g successes, the audit found exactly one log for %g of them", ok, res.Counters["audit_checked"])
			}
			var logs int
			if err := s.Deps.Store.Pool().QueryRow(ctx, `SELECT count(*) FROM verification_logs
				WHERE project_id = $1::uuid AND action = 'verify' AND result = 'success' AND verified_by = 'acvload-redeem'`,
				tn.ProjectID).Scan(&logs); err != nil {
				t.Fatal(err)
			}
			if float64(logs) != ok {
				t.Errorf("redeem: %g verifies answered success, PostgreSQL holds %d success logs of them", ok, logs)
			}
		}
	}

	// The verdicts are computed, not assumed: a latency limit no request meets fails the run.
	strict := *r
	strict.Settings.ReadMix.Duration = time.Second
	strict.Settings.ReadMix.Limits.P95Ms = 0.001
	res, err := strict.Run(ctx, "readmix")
	if err != nil {
		t.Fatal(err)
	}
	if res.Passed() {
		t.Errorf("readmix passed a p(95) limit of 1 µs:\n%s", res.Summary())
	}
}

// The audit check counts what it finds: on a stack whose relay does not run, no log of a
// successful verify reaches PostgreSQL, and every one counts as missing.
func TestRedeemAuditCountsMissingLogs(t *testing.T) {
	s := testkit.NewStack(t)
	base := s.StartAPI()
	tn := s.NewTenant(nil)
	importCodes(s, tn.ProjectID, "R-", 10)
	settings, err := loadgen.SettingsFromEnv(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	settings.Redeem.Rate, settings.Redeem.Duration, settings.Redeem.AuditWait = 10, time.Second, time.Second
	r := &loadgen.Runner{
		Target:   loadgen.Target{BaseURL: base, KeyID: tn.Key.ID, Secret: tn.Key.Secret, ProjectID: tn.ProjectID},
		Codes:    exportCodes(t, s, tn.ProjectID),
		Settings: settings,
		Log:      testLog{t},
	}
	res, err := r.Run(context.Background(), "redeem")
	if err != nil {
		t.Fatal(err)
	}
	if ok := res.Counters["redeem_success"]; ok != 10 || res.Counters["audit_log_missing"] != ok || res.Passed() {
		t.Errorf("without a relay: %g successes, %g logs missing, passed %v; want 10, 10, false:\n%s",
			ok, res.Counters["audit_log_missing"], res.Passed(), res.Summary())
	}
}

func importCodes(s *testkit.Stack, projectID, prefix string, n int) {
	values := make([]string, n)
	for i := range values {
		values[i] = fmt.Sprintf("%s%04d", prefix, i)
	}
	s.ImportCodes(projectID, nil, values...)
}

// exportCodes is the project's codes as `acv codes export` writes them, read back.
func exportCodes(t *testing.T, s *testkit.Stack, projectID string) []loadgen.Code {
	t.Helper()
	path := filepath.Join(t.TempDir(), "codes.csv")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := s.Admin.ExportCSV(context.Background(), projectID, time.Now().Unix(), f); err != nil {
		t.Fatal(err)
	}
	codes, err := loadgen.ReadCodes(path)
	if err != nil {
		t.Fatal(err)
	}
	return codes
}

// counterSum is the sum of the counter's series of the scenario in reg.
func counterSum(t *testing.T, reg *prometheus.Registry, name, scenario string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelIs(m, "scenario", scenario) {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

func labelIs(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue() == value
		}
	}
	return false
}

// testLog writes the runner's log to the test's.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
