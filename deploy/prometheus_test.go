package deploy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/acv/acv/api/client"
	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/testkit"
)

// The monitoring files under test, relative to this directory (deploy/), where they live. The
// rules and the dashboard have one source, in the Helm chart (its PrometheusRule and dashboard
// ConfigMap read them); prometheus.yml and the compose stack use the same files.
const (
	promRulesFile     = "helm/acv/files/acv.rules.yml"
	promConfigFile    = "prometheus/prometheus.yml"
	grafanaDashboard  = "helm/acv/files/acv.json"
	prometheusBinPath = "/usr/bin/prometheus"
)

// Job names of deploy/prometheus/prometheus.yml; the rules and the dashboard select on them.
const (
	jobAPI      = "acv-api"
	jobPipeline = "acv-pipeline"
)

// TestPrometheusRulesAndDashboardOnLiveStack runs the real Prometheus against a live stack (two
// API replicas and a pipeline worker) with the deployment's rule file, drives a mixed load, then
// evaluates every expression of the Grafana dashboard and of the rule file: each must be valid,
// every dashboard expression and recording rule must return data, every rule must evaluate
// healthy, and every metric selector a rule uses must match series the service exports.
func TestPrometheusRulesAndDashboardOnLiveStack(t *testing.T) {
	start := time.Now()
	bin := prometheusBinary(t)
	rulesPath, err := filepath.Abs(promRulesFile)
	if err != nil {
		t.Fatal(err)
	}
	checkDeployConfigJobs(t)
	dashExprs := dashboardExprs(t)

	s := testkit.NewStack(t)
	// Requests go to the replicas' API ports; Prometheus scrapes their debug listeners, as in
	// the compose stack: the API port serves no /metrics.
	apis, apiDebug := make([]string, 2), make([]string, 2)
	for i := range apis {
		apis[i], apiDebug[i] = s.StartAPIWithDebug()
	}
	worker := s.StartWorker("worker")
	prom := startPrometheus(t, bin, rulesPath, map[string][]string{
		jobAPI:      hostsOf(apiDebug...),
		jobPipeline: hostsOf(worker),
	})
	t.Logf("stack and prometheus up after %s", time.Since(start).Round(time.Millisecond))

	loadStart := time.Now()
	driveMixedLoad(t, s, apis, worker, 12*time.Second)
	t.Logf("load driven for %s", time.Since(loadStart).Round(time.Millisecond))
	testkit.WaitFor(t, 30*time.Second, "outbox drained", s.OutboxEmpty)

	// Prometheus has the final state once it scraped every target after the load and evaluated
	// the rules on what it scraped.
	testkit.WaitFor(t, 20*time.Second, "prometheus to scrape the stack", func() (bool, string) {
		for _, q := range []string{
			`count(up{job=~"acv-.*"} == 1) == 3`,
			`sum(acv_consumer_events_written_total) > 0`,
			`sum(acv_code_operations_total{outcome="success"}) > 0`,
			`max(acv_outbox_entries) == 0`,
		} {
			r, err := prom.query(q)
			if err != nil || len(r) == 0 {
				return false, fmt.Sprintf("%s: %d results, err %v", q, len(r), err)
			}
		}
		return true, ""
	})
	scraped := time.Now()
	testkit.WaitFor(t, 20*time.Second, "prometheus to evaluate the rules", func() (bool, string) {
		last := prom.lastEvaluation(t)
		return last.After(scraped), fmt.Sprintf("rules last evaluated at %s", last)
	})

	// Every dashboard expression is valid and returns data.
	for _, e := range dashExprs {
		q := grafanaExpand(t, e)
		r, err := prom.query(q)
		if err != nil {
			t.Errorf("dashboard expression %q: %v", e, err)
			continue
		}
		if len(r) == 0 {
			t.Errorf("dashboard expression %q returned no data", e)
		}
	}

	// Every rule of the file is loaded, evaluates healthy, and is valid on its own.
	rules := prom.rules(t)
	if want := countRules(t, rulesPath); len(rules) != want {
		t.Errorf("prometheus loaded %d rules, the file has %d", len(rules), want)
	}
	checked := map[string]bool{}
	for _, r := range rules {
		if r.Health != "ok" {
			t.Errorf("rule %s: health %q, last error %q", r.Name, r.Health, r.LastError)
		}
		if _, err := prom.query(r.Query); err != nil {
			t.Errorf("rule %s: expression %q: %v", r.Name, r.Query, err)
			continue
		}
		// A recording rule's series must exist: the dashboard and the alerts read them. An
		// alert's expression is usually empty while it does not fire.
		if r.Type == "recording" {
			if res, err := prom.query(r.Name); err != nil || len(res) == 0 {
				t.Errorf("recording rule %s has no series (err %v); expression %q", r.Name, err, r.Query)
			}
		}
		// Every selector of every rule matches what the service exports (or records), so no
		// branch of an expression silently reads nothing.
		for _, sel := range promSelectors(r.Query) {
			if checked[sel] {
				continue
			}
			checked[sel] = true
			if err := prom.selectorHasData(t, sel); err != nil {
				t.Errorf("%s rule %s: %v", r.Type, r.Name, err)
			}
		}
	}

	// A healthy stack trips none of the alerts about a dead target or an unreachable store.
	for _, r := range rules {
		switch r.Name {
		case "AcvInstanceDown", "AcvReadinessFailing", "AcvRedisUnreachable", "AcvPostgresUnreachable",
			"AcvKafkaUnreachable", "AcvHigh5xxRatio":
			if r.State != "inactive" {
				t.Errorf("alert %s is %s on a healthy stack", r.Name, r.State)
			}
		}
		if r.Type == "alerting" && r.State != "inactive" {
			t.Logf("alert %s is %s", r.Name, r.State)
		}
	}
	t.Logf("%d dashboard expressions, %d rules, %d rule selectors checked; total %s",
		len(dashExprs), len(rules), len(checked), time.Since(start).Round(time.Millisecond))
}

// prometheusBinary finds the prometheus server; `make deps` installs it.
func prometheusBinary(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(prometheusBinPath); err == nil {
		return prometheusBinPath
	}
	if p, err := exec.LookPath("prometheus"); err == nil {
		return p
	}
	t.Fatalf("the prometheus server is not installed (looked for %s and in PATH): run `make deps`, "+
		"or `apt-get install prometheus`", prometheusBinPath)
	return ""
}

// checkDeployConfigJobs makes sure the deployment's Prometheus config scrapes the job names
// this test gives its targets, so the rules are tested under the labels they see in production.
func checkDeployConfigJobs(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(promConfigFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, job := range []string{jobAPI, jobPipeline} {
		if !regexp.MustCompile(`(?m)^\s*-\s*job_name:\s*["']?` + regexp.QuoteMeta(job) + `["']?\s*$`).Match(b) {
			t.Errorf("%s has no scrape job %q", promConfigFile, job)
		}
	}
	// The API port (8080) serves no /metrics: every acv process is scraped on its debug port.
	if regexp.MustCompile(`["']?(api-\d+|pipeline):8080["']?`).Match(b) {
		t.Errorf("%s scrapes an acv process on its API port 8080; scrape its debug port (ACV_DEBUG_ADDR)", promConfigFile)
	}
}

func hostsOf(bases ...string) []string {
	out := make([]string, len(bases))
	for i, b := range bases {
		out[i] = strings.TrimPrefix(b, "http://")
	}
	return out
}

// driveMixedLoad sends, for about d: verifies that succeed and that fail (used, unknown),
// reactivates that succeed and that fail (already unused), reads, readiness probes like the
// load balancer's, a few authentication failures, an idempotent replay and conflict, and
// requests on a rate-limited key until one is refused with 429.
func driveMixedLoad(t *testing.T, s *testkit.Stack, apis []string, worker string, d time.Duration) {
	t.Helper()
	ctx := context.Background()
	tn := s.NewTenant(nil, apis...)
	const nCodes = 3000
	values := make([]string, nCodes)
	for i := range values {
		values[i] = fmt.Sprintf("PROM-%05d", i)
	}
	s.ImportCodes(tn.ProjectID, nil, values...)
	by := "till-prom"
	c0 := tn.Clients[0]

	// Idempotency: the same key and body twice is a replay, another body a conflict.
	idem := client.Options{IdempotencyKey: "prom-test-idem-1"}
	if _, _, err := c0.Verify(ctx, tn.ProjectID, contract.VerifyRequest{Code: values[0], VerifiedBy: &by}, idem); err != nil {
		t.Fatalf("verify with idempotency key: %v", err)
	}
	if _, h, err := c0.Verify(ctx, tn.ProjectID, contract.VerifyRequest{Code: values[0], VerifiedBy: &by}, idem); err != nil || h.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("idempotent replay: err %v, Idempotent-Replayed %q", err, h.Get("Idempotent-Replayed"))
	}
	if _, _, err := c0.Verify(ctx, tn.ProjectID, contract.VerifyRequest{Code: values[1], VerifiedBy: &by}, idem); statusOf(err) != http.StatusConflict {
		t.Fatalf("idempotency conflict: want 409, got %v", err)
	}

	// Rate limiting: a key allowing one request a second, asked several times at once.
	lk, err := s.Admin.CreateAPIKey(ctx, tn.ProjectID, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	limited := s.Client(apis[0], lk.ID, lk.Secret)
	got429 := false
	for i := 0; i < 10 && !got429; i++ {
		_, err := limited.Project(ctx, tn.ProjectID)
		got429 = statusOf(err) == http.StatusTooManyRequests
	}
	if !got429 {
		t.Fatal("a key limited to 1 request/s was never refused with 429")
	}

	// Authentication failures: no headers, an unknown key, a bad signature.
	resp, err := s.HTTP.Get(apis[1] + "/api/v1/projects/" + tn.ProjectID)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("request without auth headers: status %d, want 401", resp.StatusCode)
	}
	unknown := s.Client(apis[1], contract.NewID(), "x")
	if _, err := unknown.Project(ctx, tn.ProjectID); statusOf(err) != http.StatusUnauthorized {
		t.Fatalf("unknown key: want 401, got %v", err)
	}
	badSig := s.Client(apis[0], tn.Key.ID, tn.Key.Secret+"x")
	if _, err := badSig.Project(ctx, tn.ProjectID); statusOf(err) != http.StatusUnauthorized {
		t.Fatalf("bad signature: want 401, got %v", err)
	}

	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	var next, fails atomic.Int64
	report := func(what string, err error) {
		if err != nil && fails.Add(1) <= 5 {
			t.Errorf("%s: %v", what, err)
		}
	}
	// Readiness probes, as the load balancer and the container health check send them.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for time.Now().Before(deadline) {
			for _, b := range append([]string{worker}, apis...) {
				for _, p := range []string{"/readyz", "/healthz"} {
					r, err := s.HTTP.Get(b + p)
					if err != nil {
						report("probe "+p, err)
						continue
					}
					io.Copy(io.Discard, r.Body)
					r.Body.Close()
					if r.StatusCode != http.StatusOK {
						report("probe "+p, fmt.Errorf("status %d", r.StatusCode))
					}
				}
			}
			time.Sleep(250 * time.Millisecond)
		}
	}()
	for w := 0; w < 4; w++ {
		c := tn.Clients[w%len(tn.Clients)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				n := next.Add(1)
				code := values[2+int(n)%(nCodes-2)]
				_, _, err := c.Verify(ctx, tn.ProjectID, contract.VerifyRequest{Code: code, VerifiedBy: &by}, client.Options{})
				report("verify", err)
				if n%3 == 0 { // CODE_ALREADY_USED
					_, _, err = c.Verify(ctx, tn.ProjectID, contract.VerifyRequest{Code: code, VerifiedBy: &by}, client.Options{})
					report("verify again", err)
				}
				if n%4 == 0 { // success, then CODE_ALREADY_UNUSED
					_, _, err = c.Reactivate(ctx, tn.ProjectID, contract.ReactivateRequest{Code: code, ReactivatedBy: &by}, client.Options{})
					report("reactivate", err)
					_, _, err = c.Reactivate(ctx, tn.ProjectID, contract.ReactivateRequest{Code: code, ReactivatedBy: &by}, client.Options{})
					report("reactivate again", err)
				}
				if n%5 == 0 { // CODE_NOT_FOUND
					_, _, err = c.Verify(ctx, tn.ProjectID, contract.VerifyRequest{Code: fmt.Sprintf("NOPE-%d", n)}, client.Options{})
					report("verify unknown", err)
				}
				if n%7 == 0 {
					_, err = c.Project(ctx, tn.ProjectID)
					report("project", err)
					_, err = c.ListCodes(ctx, tn.ProjectID, client.ListParams{PageSize: 20, Search: "PROM-0"})
					report("list", err)
					_, err = c.CodeByValue(ctx, tn.ProjectID, code)
					report("code by value", err)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	t.Logf("mixed load: %d rounds", next.Load())
}

func statusOf(err error) int {
	var e *client.Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

type promServer struct {
	base string
	http *http.Client
}

// startPrometheus runs the prometheus binary on a free loopback port with a generated config
// scraping targets (job name → host:port) every second and loading rulesPath. It is killed
// when the test ends.
func startPrometheus(t *testing.T, bin, rulesPath string, targets map[string][]string) *promServer {
	t.Helper()
	dir := t.TempDir()
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n")
	fmt.Fprintf(&cfg, "rule_files:\n  - %q\n", rulesPath)
	fmt.Fprintf(&cfg, "scrape_configs:\n")
	jobs := make([]string, 0, len(targets))
	for j := range targets {
		jobs = append(jobs, j)
	}
	sort.Strings(jobs)
	for _, j := range jobs {
		quoted := make([]string, len(targets[j]))
		for i, h := range targets[j] {
			quoted[i] = fmt.Sprintf("%q", h)
		}
		fmt.Fprintf(&cfg, "  - job_name: %q\n    static_configs:\n      - targets: [%s]\n", j, strings.Join(quoted, ", "))
	}
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := localenv.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		p, err := runPrometheus(t, bin, cfgPath, filepath.Join(dir, fmt.Sprintf("data%d", attempt)), port)
		if err == nil {
			return p
		}
		lastErr = err
	}
	t.Fatalf("start prometheus: %v\nconfig:\n%s", lastErr, cfg.String())
	return nil
}

func runPrometheus(t *testing.T, bin, cfgPath, dataDir string, port int) (*promServer, error) {
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin,
		"--config.file="+cfgPath,
		"--storage.tsdb.path="+dataDir,
		"--web.listen-address="+addr,
		"--log.level=warn",
	)
	out := &testkit.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	// Killed with the test binary even if it crashes.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("run %s: %w", bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
	}
	p := &promServer{base: "http://" + addr, http: &http.Client{Timeout: 10 * time.Second}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-exited:
			return nil, fmt.Errorf("prometheus exited during startup:\n%s", out.String())
		default:
		}
		if r, err := p.http.Get(p.base + "/-/ready"); err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("prometheus not ready after 30s:\n%s", out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("prometheus output:\n%s", out.String())
		}
	})
	return p, nil
}

type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  []interface{}     `json:"value"`
}

// query runs an instant query now and returns its vector, or one element for a scalar; an
// error when Prometheus refuses the expression.
func (p *promServer) query(q string) ([]promSample, error) {
	var body struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
		Data      struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := p.get("/api/v1/query?query="+url.QueryEscape(q), &body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("status %s: %s: %s", body.Status, body.ErrorType, body.Error)
	}
	switch body.Data.ResultType {
	case "vector":
		var v []promSample
		if err := json.Unmarshal(body.Data.Result, &v); err != nil {
			return nil, err
		}
		return v, nil
	case "scalar":
		return []promSample{{}}, nil
	default:
		return nil, fmt.Errorf("result type %s", body.Data.ResultType)
	}
}

func (p *promServer) get(path string, into interface{}) error {
	r, err := p.http.Get(p.base + path)
	if err != nil {
		return err
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, into); err != nil {
		return fmt.Errorf("HTTP %d: %s", r.StatusCode, b)
	}
	return nil
}

// lastEvaluation is the time every rule group has been evaluated at least once since.
func (p *promServer) lastEvaluation(t *testing.T) time.Time {
	t.Helper()
	var body struct {
		Data struct {
			Groups []struct {
				LastEvaluation time.Time `json:"lastEvaluation"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := p.get("/api/v1/rules", &body); err != nil {
		t.Fatalf("list rules: %v", err)
	}
	var oldest time.Time
	for i, g := range body.Data.Groups {
		if i == 0 || g.LastEvaluation.Before(oldest) {
			oldest = g.LastEvaluation
		}
	}
	return oldest
}

type promRule struct {
	Name, Query, Type, Health, LastError, State string
}

// rules lists every rule Prometheus loaded, with its health and (for alerts) state.
func (p *promServer) rules(t *testing.T) []promRule {
	t.Helper()
	var body struct {
		Status string `json:"status"`
		Data   struct {
			Groups []struct {
				Rules []promRule `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := p.get("/api/v1/rules", &body); err != nil || body.Status != "success" {
		t.Fatalf("list rules: %v (status %q)", err, body.Status)
	}
	var out []promRule
	for _, g := range body.Data.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

// statusMatcher is a matcher on the HTTP status label, the one label whose failing values
// (5xx, 503 from /readyz) a healthy stack does not produce.
var statusMatcher = regexp.MustCompile(`,?\s*status\s*(=~|!~|!=|=)\s*"[^"]*"\s*,?`)

// selectorHasData checks that sel matches series. A selector restricted to failing HTTP
// statuses is empty on a healthy stack by design; then the same selector without the status
// matcher must match.
func (p *promServer) selectorHasData(t *testing.T, sel string) error {
	r, err := p.query(sel)
	if err != nil {
		return fmt.Errorf("selector %s: %v", sel, err)
	}
	if len(r) > 0 {
		return nil
	}
	if statusMatcher.MatchString(sel) {
		wider := withoutStatus(sel)
		r, err := p.query(wider)
		if err != nil {
			return fmt.Errorf("selector %s: %v", wider, err)
		}
		if len(r) > 0 {
			t.Logf("selector %s matches nothing on a healthy stack; %s does", sel, wider)
			return nil
		}
		return fmt.Errorf("selector %s (and %s) matches no series", sel, wider)
	}
	return fmt.Errorf("selector %s matches no series", sel)
}

// withoutStatus drops the status matcher of a selector.
func withoutStatus(sel string) string {
	return statusMatcher.ReplaceAllStringFunc(sel, func(m string) string {
		if m = strings.TrimSpace(m); strings.HasPrefix(m, ",") && strings.HasSuffix(m, ",") {
			return ","
		}
		return ""
	})
}

// countRules counts the record: and alert: entries of a rule file.
func countRules(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return len(regexp.MustCompile(`(?m)^\s*-\s*(record|alert):`).FindAll(b, -1))
}

// dashboardExprs returns every "expr" string anywhere in the dashboard JSON: panel targets,
// nested rows, templating and annotations alike.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(grafanaDashboard)
	if err != nil {
		t.Fatal(err)
	}
	var doc interface{}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", grafanaDashboard, err)
	}
	var out []string
	var walk func(v interface{})
	walk = func(v interface{}) {
		switch x := v.(type) {
		case map[string]interface{}:
			for k, e := range x {
				if s, ok := e.(string); ok && (k == "expr" || k == "query") && strings.TrimSpace(s) != "" {
					out = append(out, s)
					continue
				}
				walk(e)
			}
		case []interface{}:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(doc)
	if len(out) == 0 {
		t.Fatalf("%s has no expressions", grafanaDashboard)
	}
	sort.Strings(out)
	return out
}

// grafanaExpand replaces Grafana's interval variables as a 1-second scrape would set them;
// any other variable is an error, since the test could not know its value.
func grafanaExpand(t *testing.T, expr string) string {
	t.Helper()
	q := strings.NewReplacer("$__rate_interval", "1m", "${__rate_interval}", "1m",
		"$__interval", "5s", "${__interval}", "5s", "$__range", "1m", "${__range}", "1m").Replace(expr)
	if strings.Contains(q, "$") {
		t.Errorf("dashboard expression %q uses a variable the test does not know", expr)
	}
	return q
}

var promqlGrouping = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true,
	"group_left": true, "group_right": true}

var promqlWords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true,
	"inf": true, "nan": true,
	// aggregations, which may be followed by by/without before their parenthesis
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
	"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true}

// promSelectors returns the vector selectors of a PromQL expression, as written: a metric name
// with its matchers when it has some. It knows enough PromQL for the rule file: functions,
// aggregations with by/without, binary operators with on/ignoring/group_*, ranges, strings.
func promSelectors(expr string) []string {
	isStart := func(c byte) bool { return c == '_' || c == ':' || (c|0x20) >= 'a' && (c|0x20) <= 'z' }
	isIdent := func(c byte) bool { return isStart(c) || c >= '0' && c <= '9' }
	skipSpace := func(i int) int {
		for i < len(expr) && (expr[i] == ' ' || expr[i] == '\t' || expr[i] == '\n' || expr[i] == '\r') {
			i++
		}
		return i
	}
	// closing returns the index after the bracket closing the one at i, skipping strings.
	closing := func(i int, open, close byte) int {
		depth := 0
		for j := i; j < len(expr); j++ {
			switch expr[j] {
			case '"', '\'', '`':
				q := expr[j]
				for j++; j < len(expr) && expr[j] != q; j++ {
					if expr[j] == '\\' && q != '`' {
						j++
					}
				}
			case open:
				depth++
			case close:
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(expr)
	}
	var out []string
	seen := map[string]bool{}
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(expr) && expr[j] != c {
				if expr[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			i = j + 1
		case c == '#':
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case c >= '0' && c <= '9' || c == '.':
			for i < len(expr) && (isIdent(expr[i]) || expr[i] == '.') {
				i++
			}
		case c == '[':
			i = closing(i, '[', ']')
		case c == '{':
			i = closing(i, '{', '}')
		case isStart(c):
			j := i
			for j < len(expr) && isIdent(expr[j]) {
				j++
			}
			word := expr[i:j]
			k := skipSpace(j)
			lower := strings.ToLower(word)
			switch {
			case promqlGrouping[lower]:
				if k < len(expr) && expr[k] == '(' {
					j = closing(k, '(', ')')
				}
			case k < len(expr) && expr[k] == '(': // a function or aggregation
			case promqlWords[lower]:
			default:
				sel := word
				if k < len(expr) && expr[k] == '{' {
					end := closing(k, '{', '}')
					sel += expr[k:end]
					j = end
				}
				if !seen[sel] {
					seen[sel] = true
					out = append(out, sel)
				}
			}
			i = j
		default:
			i++
		}
	}
	return out
}

func TestPromSelectors(t *testing.T) {
	for _, c := range []struct {
		expr string
		want []string
	}{
		{`up{job=~"acv-.*"} == 0`, []string{`up{job=~"acv-.*"}`}},
		{`sum by (job, instance) (rate(acv_http_requests_total{route="/readyz",status="503"}[2m])) / sum by (job) (rate(x[5m])) > 0.5`,
			[]string{`acv_http_requests_total{route="/readyz",status="503"}`, `x`}},
		{`deriv(acv:outbox_entries:max[10m]) > 1 and acv:outbox_entries:max > 1000`, []string{`acv:outbox_entries:max`}},
		{`(sum(rate(a_total{s="publish"}[5m])) > 0 and on () sum(rate(b_total[5m])) == 0) or on () (absent(c) and on () count(up{job=~"acv-.*"} == 1) > 0)`,
			[]string{`a_total{s="publish"}`, `b_total`, `c`, `up{job=~"acv-.*"}`}},
		{`histogram_quantile(0.99, sum by (le) (rate(h_bucket{x="by (y)"}[5m]))) > 5`, []string{`h_bucket{x="by (y)"}`}},
		{`x * on (job) group_left (instance) y offset 5m`, []string{`x`, `y`}},
	} {
		got := promSelectors(c.expr)
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("promSelectors(%q) = %q, want %q", c.expr, got, c.want)
		}
	}
	for _, c := range []struct{ in, want string }{
		{`m{route="/readyz",status="503"}`, `m{route="/readyz"}`},
		{`m{status=~"5..",route!~"/metrics"}`, `m{route!~"/metrics"}`},
		{`m{a="1",status="503",b="2"}`, `m{a="1",b="2"}`},
	} {
		if got := withoutStatus(c.in); got != c.want {
			t.Errorf("without status matcher: %q → %q, want %q", c.in, got, c.want)
		}
	}
}
