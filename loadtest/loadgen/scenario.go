package loadgen

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/acv/acv/api/client"
)

// Scenarios are the scenarios of loadtest/k6, ported to Go, in the order make loadtest runs
// them. Each keeps its k6 script's model (open or closed), thresholds and checks.
var Scenarios = []string{"redeem", "contention", "reactivate", "readmix"}

// Target is the service a scenario drives and the key it signs with (BASE_URL, API_KEY,
// API_SECRET, PROJECT_ID). A path prefix of BaseURL is signed with the path.
type Target struct {
	BaseURL, KeyID, Secret, ProjectID string
}

// Runner runs scenarios against one target with the codes of one export.
type Runner struct {
	Target   Target
	Codes    []Code
	Settings Settings
	Metrics  *Metrics  // when set, receives every request and each scenario's verdict
	Log      io.Writer // progress, the first few failing answers, the summary; nil discards them
	// HTTP is the client; nil makes one with Settings.Timeout and an idle connection a VU.
	HTTP *http.Client
}

// Run runs the scenario name (one of Scenarios). A scenario that cannot start returns an
// error, as a k6 script's setup throws; one that ran returns its Result.
func (r *Runner) Run(ctx context.Context, name string) (Result, error) {
	var s ScenarioSettings
	var scenario func(*run, context.Context, ScenarioSettings) error
	switch name {
	case "redeem":
		s, scenario = r.Settings.Redeem, (*run).redeem
	case "contention":
		s, scenario = r.Settings.Contention, (*run).contention
	case "reactivate":
		s, scenario = r.Settings.Reactivate, (*run).reactivate
	case "readmix":
		s, scenario = r.Settings.ReadMix, (*run).readMix
	default:
		return Result{}, fmt.Errorf("no scenario %q (scenarios: %s)", name, strings.Join(Scenarios, ", "))
	}
	hc := r.HTTP
	if hc == nil { // no proxy: the load goes straight to the target
		hc = &http.Client{Timeout: cmp.Or(r.Settings.Timeout, 10*time.Second), Transport: &http.Transport{
			MaxIdleConns: 2048, MaxIdleConnsPerHost: 2048, IdleConnTimeout: 90 * time.Second,
		}}
	}
	t := r.Target
	x := &run{scenario: name, r: r, m: cmp.Or(r.Metrics, NewMetrics(prometheus.NewRegistry())),
		cl:    &client.Client{BaseURL: strings.TrimSuffix(t.BaseURL, "/"), KeyID: t.KeyID, Secret: t.Secret, HTTP: hc},
		latBy: map[string][]time.Duration{}, failing: map[string]int64{}, counters: map[string]float64{}}
	if err := scenario(x, ctx, s); err != nil {
		return Result{}, fmt.Errorf("%s: %w", name, err)
	}
	// Every scenario's thresholds come first, then those of its own.
	own := x.thresholds
	x.thresholds = nil
	x.standard(s.Limits)
	x.expect("unexpected_failures", "==", 0)
	x.thresholds = append(x.thresholds, own...)
	res := x.result()
	failed := len(res.Failing())
	x.m.thresholds.WithLabelValues(name, "pass").Set(float64(len(res.Thresholds) - failed))
	x.m.thresholds.WithLabelValues(name, "fail").Set(float64(failed))
	x.logf("%s", res.Summary())
	return res, nil
}

// Result is what a scenario's load phase measured and how its thresholds judged it.
type Result struct {
	Scenario       string      `json:"scenario"`
	Requests       int64       `json:"requests"`
	Seconds        float64     `json:"seconds"`
	RPS            float64     `json:"rps"`
	P95Ms          float64     `json:"p95_ms"`
	P99Ms          float64     `json:"p99_ms"`
	FailedRequests int64       `json:"failed_requests"`
	Checks         int64       `json:"checks"`
	ChecksFailed   int64       `json:"checks_failed"`
	Thresholds     []Threshold `json:"thresholds"`
	// Counters are the scenario's own counts, named with their tags as k6 names them
	// (redeem_success{round:0,code:1}).
	Counters map[string]float64 `json:"counters"`
	// Notes say what the scenario checked beyond the thresholds' numbers.
	Notes []string `json:"notes,omitempty"`
}

// Threshold is one threshold: the metric (with its tags) as the k6 script names it, the
// condition, the value measured and the verdict.
type Threshold struct {
	Metric    string `json:"metric"`
	Condition string `json:"condition"`
	Actual    string `json:"actual"`
	Pass      bool   `json:"pass"`
}

// Passed tells whether every threshold held.
func (r Result) Passed() bool { return len(r.Thresholds) > 0 && len(r.Failing()) == 0 }

// Failing is the metrics of the thresholds that did not hold.
func (r Result) Failing() []string {
	var out []string
	for _, t := range r.Thresholds {
		if !t.Pass {
			out = append(out, t.Metric)
		}
	}
	return out
}

// Summary is the result as k6's summary shows thresholds: one line each, ✓ or ✗, with the
// value measured, then the notes.
func (r Result) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d requests in the load phase (%.1f/s), p95 %.1f ms, p99 %.1f ms, %d failed, %d of %d checks failed\n",
		r.Scenario, r.Requests, r.RPS, r.P95Ms, r.P99Ms, r.FailedRequests, r.ChecksFailed, r.Checks)
	for _, t := range r.Thresholds {
		fmt.Fprintf(&b, "  %s %s %s  %s\n", map[bool]string{true: "✓", false: "✗"}[t.Pass], t.Metric, t.Condition, t.Actual)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "  %s\n", n)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Phases of a scenario: only the load phase's requests and checks are judged.
const (
	phaseSetup    = "setup"
	phaseLoad     = "load"
	phaseTeardown = "teardown"
)

// run is one scenario's run: it sends the requests and records what the thresholds judge.
type run struct {
	scenario string
	r        *Runner
	m        *Metrics
	cl       *client.Client
	warned   atomic.Int64

	loadSeconds float64 // set once the load phase ended
	mu          sync.Mutex
	latBy       map[string][]time.Duration // the load phase's requests by endpoint
	failed      int64
	checksPass  int64
	checksFail  int64
	failing     map[string]int64
	counters    map[string]float64
	thresholds  []Threshold
	notes       []string
}

func (x *run) logf(format string, args ...any) {
	if x.r.Log != nil {
		fmt.Fprintf(x.r.Log, format+"\n", args...)
	}
}

// warnf logs the first few failing answers, so a failing run explains itself without flooding.
func (x *run) warnf(format string, args ...any) {
	if x.warned.Add(1) <= 5 {
		x.logf(x.scenario+": "+format, args...)
	}
}

// answer is one request's answer; interrupted is set when the scenario cut the request short
// (its phase ended), which counts as no sample at all.
type answer struct {
	status      int
	body        []byte
	err         error
	interrupted bool
}

func (a answer) String() string {
	if a.err != nil {
		return a.err.Error()
	}
	return fmt.Sprintf("HTTP %d %s", a.status, a.body[:min(len(a.body), 300)])
}

// send sends one signed request of the phase to pathAndQuery (encoded), recorded as endpoint.
func (x *run) send(ctx context.Context, phase, endpoint, method, pathAndQuery string, body map[string]string) answer {
	var b []byte
	if body != nil {
		b, _ = json.Marshal(body) // strings always encode
	}
	t0 := time.Now()
	resp, rb, err := x.cl.Do(ctx, method, pathAndQuery, b, nil)
	d := time.Since(t0)
	a := answer{body: rb, err: err, interrupted: err != nil && ctx.Err() != nil}
	if resp != nil {
		a.status = resp.StatusCode
	}
	if a.interrupted {
		return a
	}
	x.m.requests.WithLabelValues(x.scenario, endpoint, phase, outcome(a.status, err)).Inc()
	x.m.duration.WithLabelValues(x.scenario, endpoint, phase).Observe(d.Seconds())
	if phase == phaseLoad {
		x.mu.Lock()
		x.latBy[endpoint] = append(x.latBy[endpoint], d)
		if err != nil || a.status < 200 || a.status >= 400 { // k6's http_req_failed: no 2xx or 3xx answer
			x.failed++
		}
		x.mu.Unlock()
	}
	return a
}

type check struct {
	name string
	ok   bool
}

// checks records the checks of the answer a, as k6's check() does, and tells whether all
// passed; when one failed, a is an answer a correct service never gives, shown as what.
func (x *run) checks(what string, a answer, cs ...check) bool {
	all := true
	for _, c := range cs {
		x.mu.Lock()
		if c.ok {
			x.checksPass++
		} else {
			x.checksFail++
			x.failing[c.name]++
		}
		x.mu.Unlock()
		x.m.checks.WithLabelValues(x.scenario, map[bool]string{true: "pass", false: "fail"}[c.ok]).Inc()
		all = all && c.ok
	}
	if !all {
		x.unexpected("%s: %s", what, a)
	}
	return all
}

// succeeded checks that a answered the request what with status 200 and success=true, and the
// more checks (see checks).
func (x *run) succeeded(what, shown string, a answer, more ...check) bool {
	return x.checks(shown, a, append([]check{{what + ": status 200", a.status == 200},
		{what + ": success=true", a.decode()["success"] == true}}, more...)...)
}

// unexpected counts something a correct service never does, and shows the first few.
func (x *run) unexpected(format string, args ...any) {
	x.add("unexpected_failures", 1)
	x.warnf(format, args...)
}

// add adds v to the scenario's counter name (with its tags, k6-style).
func (x *run) add(name string, v float64) {
	x.mu.Lock()
	x.counters[name] += v
	x.mu.Unlock()
	switch name {
	case "unexpected_failures":
		x.m.unexpected.WithLabelValues(x.scenario).Add(v)
	case "dropped_iterations":
		x.m.dropped.WithLabelValues(x.scenario).Add(v)
	}
}

func (x *run) count(name string) float64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.counters[name]
}

// loadPhase runs fn as the load phase, whose requests and checks the thresholds judge; rate is
// the open model's (0 for a closed one).
func (x *run) loadPhase(rate float64, fn func()) {
	x.m.running.WithLabelValues(x.scenario).Set(1)
	x.m.rate.WithLabelValues(x.scenario).Set(rate)
	start := time.Now()
	fn()
	x.loadSeconds = time.Since(start).Seconds()
	x.m.running.WithLabelValues(x.scenario).Set(0)
}

// open runs the load phase as an open model, counting the iterations it could not start.
func (x *run) open(ctx context.Context, rate float64, d time.Duration, maxVUs int, fn func(vu int, iter int64)) {
	var dropped int64
	x.loadPhase(rate, func() { dropped = openModel(ctx, rate, d, maxVUs, fn) })
	x.add("dropped_iterations", float64(dropped))
}

func (x *run) judge(metric, condition, actual string, pass bool) {
	x.thresholds = append(x.thresholds, Threshold{Metric: metric, Condition: condition, Actual: actual, Pass: pass})
}

// standard adds the latency, failure and check thresholds of the load phase.
func (x *run) standard(l Limits) {
	r := x.result()
	const lat = "http_req_duration{phase:load}"
	x.judge(lat, fmt.Sprintf("p(95)<%g", l.P95Ms), fmt.Sprintf("p(95)=%.2fms", r.P95Ms), r.P95Ms < l.P95Ms)
	x.judge(lat, fmt.Sprintf("p(99)<%g", l.P99Ms), fmt.Sprintf("p(99)=%.2fms", r.P99Ms), r.P99Ms < l.P99Ms)
	failed := float64(r.FailedRequests) / float64(max(r.Requests, 1))
	x.judge("http_req_failed{phase:load}", fmt.Sprintf("rate<=%g", l.MaxFailedRate),
		fmt.Sprintf("rate=%.4f (%d of %d)", failed, r.FailedRequests, r.Requests), failed <= l.MaxFailedRate)
	// k6 does not judge a metric without samples; http_reqs below fails an empty run.
	checks, passed := "no checks", 1-float64(r.ChecksFailed)/float64(max(r.Checks, 1))
	if r.Checks > 0 {
		checks = fmt.Sprintf("rate=%.4f (%d of %d failed)", passed, r.ChecksFailed, r.Checks)
	}
	x.judge("checks{phase:load}", fmt.Sprintf("rate>=%g", l.MinChecksRate), checks, r.Checks == 0 || passed >= l.MinChecksRate)
	x.judge("http_reqs{phase:load}", "count>0", fmt.Sprintf("count=%d", r.Requests), r.Requests > 0)
}

// expect adds a threshold on the counter name: its value compared with want by op (==, <=, >).
func (x *run) expect(name, op string, want float64) {
	got := x.count(name)
	pass := map[string]bool{"==": got == want, "<=": got <= want, ">": got > want}[op]
	x.judge(name, fmt.Sprintf("count%s%g", op, want), fmt.Sprintf("count=%g", got), pass)
}

// endpointP95 adds the threshold p(95) < limit on the load phase's requests to endpoint. An
// endpoint without requests is not judged, as k6 does not judge a sub-metric without samples.
func (x *run) endpointP95(endpoint string, limit float64) {
	lat := x.latBy[endpoint]
	p, actual := PercentileMs(lat, 95), "no requests"
	if len(lat) > 0 {
		actual = fmt.Sprintf("p(95)=%.2fms", p)
	}
	x.judge("http_req_duration{endpoint:"+endpoint+"}", fmt.Sprintf("p(95)<%g", limit), actual, len(lat) == 0 || p < limit)
}

func (x *run) result() Result {
	x.mu.Lock()
	defer x.mu.Unlock()
	lat := slices.Concat(slices.Collect(maps.Values(x.latBy))...)
	res := Result{Scenario: x.scenario, Requests: int64(len(lat)), FailedRequests: x.failed,
		Checks: x.checksPass + x.checksFail, ChecksFailed: x.checksFail, Seconds: x.loadSeconds,
		P95Ms: PercentileMs(lat, 95), P99Ms: PercentileMs(lat, 99),
		Thresholds: x.thresholds, Counters: x.counters, Notes: x.notes}
	if res.Seconds > 0 {
		res.RPS = float64(res.Requests) / res.Seconds
	}
	for _, n := range slices.Sorted(maps.Keys(x.failing)) {
		res.Notes = append(res.Notes, fmt.Sprintf("check %q failed %d times", n, x.failing[n]))
	}
	return res
}

// PercentileMs is the p-th percentile of the durations in milliseconds, interpolated between
// the two nearest samples as k6's trend metrics compute it; 0 without samples.
func PercentileMs(d []time.Duration, p float64) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(d))
	pos := p / 100 * float64(len(s)-1)
	lo := int(pos)
	if lo >= len(s)-1 {
		return float64(s[len(s)-1]) / 1e6
	}
	frac := pos - float64(lo)
	return (float64(s[lo]) + frac*float64(s[lo+1]-s[lo])) / 1e6
}

// Metrics are the load generator's own series, for the Prometheus of the service it loads.
type Metrics struct {
	requests, checks, dropped, unexpected *prometheus.CounterVec
	duration                              *prometheus.HistogramVec
	running, rate, thresholds             *prometheus.GaugeVec
}

// NewMetrics registers the series on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return f.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return f.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
	return &Metrics{
		duration: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "acv_loadtest_request_duration_seconds",
			Help:    "Request duration as the load generator saw it (sending to the last byte of the answer), by scenario, endpoint and phase.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}, // api/httpapi's
		}, []string{"scenario", "endpoint", "phase"}),
		requests: counter("acv_loadtest_requests_total",
			"Requests the load generator sent, by scenario, endpoint, phase (setup, load, teardown) and outcome: the HTTP status class (2xx, 4xx, 5xx) or error when no answer came.",
			"scenario", "endpoint", "phase", "outcome"),
		checks: counter("acv_loadtest_checks_total",
			"Checks of the answers against the contract, by scenario and result (pass, fail).", "scenario", "result"),
		dropped: counter("acv_loadtest_dropped_iterations_total",
			"Iterations an open-model scenario could not start on time for want of a free VU.", "scenario"),
		unexpected: counter("acv_loadtest_unexpected_failures_total",
			"Answers a correct service never gives in the scenario (its unexpected_failures).", "scenario"),
		running: gauge("acv_loadtest_scenario_running", "1 while the scenario's load phase runs.", "scenario"),
		rate: gauge("acv_loadtest_target_rate_per_second",
			"Iterations per second an open-model scenario starts (0 for a closed model).", "scenario"),
		thresholds: gauge("acv_loadtest_thresholds", "The thresholds of the scenario's last run, by result (pass, fail).", "scenario", "result"),
	}
}

// outcome is a request's outcome label: its status class, or error without an answer.
func outcome(status int, err error) string {
	if err != nil || status == 0 {
		return "error"
	}
	return strconv.Itoa(status/100) + "xx"
}

// iterations is how many iterations an open model starts at rate per second in d.
func iterations(rate float64, d time.Duration) int {
	if rate <= 0 || d <= 0 {
		return 0
	}
	return int(math.Ceil(rate*d.Seconds() - 1e-9))
}

// openModel runs fn at a fixed arrival rate, as k6's constant-arrival-rate executor does: an
// iteration due while every VU (1 … maxVUs) is busy is dropped. It returns once every started
// iteration finished, with the number dropped.
func openModel(ctx context.Context, rate float64, d time.Duration, maxVUs int, fn func(vu int, iter int64)) (dropped int64) {
	free := make(chan int, max(1, maxVUs))
	for vu := 1; vu <= cap(free); vu++ {
		free <- vu
	}
	interval := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	var wg sync.WaitGroup
	defer wg.Wait()
	var started int64
	for i := range iterations(rate, d) {
		if !sleepUntil(ctx, start.Add(time.Duration(i)*interval)) {
			return dropped
		}
		select {
		case vu := <-free:
			iter := started
			started++
			wg.Go(func() {
				defer func() { free <- vu }()
				fn(vu, iter)
			})
		default:
			dropped++
		}
	}
	return dropped
}

// closedModel runs vus VUs that each repeat fn back to back for d, as k6's constant-vus
// executor does; an iteration running when d ends finishes.
func closedModel(ctx context.Context, vus int, d time.Duration, fn func(vu int)) {
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for vu := 1; vu <= vus; vu++ {
		wg.Go(func() {
			for ctx.Err() == nil && time.Now().Before(end) {
				fn(vu)
			}
		})
	}
	wg.Wait()
}

// sleepUntil waits until t, or until ctx ends; it tells whether t came.
func sleepUntil(ctx context.Context, t time.Time) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(time.Until(t)):
		return ctx.Err() == nil
	}
}

// The requests of the scenarios, as loadtest/k6/lib/sign.js sends them; endpoint names the
// request in the metrics and thresholds.
func (x *run) projectPath() string {
	return "/api/v1/projects/" + url.PathEscape(x.r.Target.ProjectID)
}

func (x *run) verify(ctx context.Context, phase, code, by string) answer {
	return x.send(ctx, phase, "verify", http.MethodPost, x.projectPath()+"/codes/verify",
		map[string]string{"code": code, "verified_by": by})
}

func (x *run) reactivateCode(ctx context.Context, phase, code, by, reason string) answer {
	return x.send(ctx, phase, "reactivate", http.MethodPost, x.projectPath()+"/codes/reactivate",
		map[string]string{"code": code, "reactivated_by": by, "reason": reason})
}

func (x *run) codeByValue(ctx context.Context, phase, endpoint, value string) answer {
	return x.send(ctx, phase, endpoint, http.MethodGet, x.projectPath()+"/codes/by-code/"+url.PathEscape(value), nil)
}

// listCodes reads a page of the load phase's codes; status and search may be empty.
func (x *run) listCodes(ctx context.Context, endpoint, status, search string, page, size int) answer {
	q := url.Values{"page": {strconv.Itoa(page)}, "page_size": {strconv.Itoa(size)}}
	for k, v := range map[string]string{"status": status, "search": search} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return x.send(ctx, phaseLoad, endpoint, http.MethodGet, x.projectPath()+"/codes?"+q.Encode(), nil)
}

// object is a JSON object of an answer, read with its numbers as written, so a check can tell
// an integer from a fraction and a null from a missing field, as the k6 scripts' checks do.
type object map[string]any

// decode reads the answer's body as a JSON object; nil when it is not one.
func (a answer) decode() object {
	d := json.NewDecoder(bytes.NewReader(a.body))
	d.UseNumber()
	var o map[string]any
	if d.Decode(&o) != nil {
		return nil
	}
	return o
}

// str is the field as a string; "" when it is not one.
func (o object) str(k string) string {
	s, _ := o[k].(string)
	return s
}

func (o object) isNull(k string) bool {
	v, ok := o[k]
	return ok && v == nil
}

// integer is the field as an integer, when it is one.
func (o object) integer(k string) (int64, bool) {
	n, _ := o[k].(json.Number)
	i, err := n.Int64()
	return i, err == nil
}

func (o object) isInt(k string) bool { _, ok := o.integer(k); return ok }

func (o object) isNullOrInt(k string) bool { return o.isNull(k) || o.isInt(k) }

// is tells whether the field is a T.
func is[T any](o object, k string) bool {
	_, ok := o[k].(T)
	return ok
}

// codeShape is the contract's code resource: every field of its type.
func codeShape(c object) bool {
	return c != nil && is[string](c, "id") && is[string](c, "code") && is[bool](c, "status") &&
		is[bool](c, "is_disabled") && is[bool](c, "is_expired") && c.isNullOrInt("expires_at") &&
		c.isNullOrInt("verified_at") && c.isInt("created_at") && (c.isNull("verified_by") || is[string](c, "verified_by"))
}
