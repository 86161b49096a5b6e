package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/acv/acv/internal/testkit"
)

// The banner lines naming the metrics listener and the Prometheus.
var (
	metricsLine    = regexp.MustCompile(`(?m)^metrics: (http://\S+/metrics) `)
	prometheusLine = regexp.MustCompile(`(?m)^Prometheus: (http://\S+) `)
)

// `make run` serves /metrics where a user looks: on a loopback address of its own, not on the
// API port, printed in the banner and written to .acv/env as ACV_DEV_METRICS_URL. The address
// answers with the service's series.
func TestDevServesMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("builds acv and runs acv dev")
	}
	h := newDevHarness(t, devBinaries(t).acv, "acv-devmetrics-")
	dev := h.start()
	out := h.waitLine(dev, metricsLine)
	metrics := out[1]
	u, err := url.Parse(metrics)
	if err != nil {
		t.Fatal(err)
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		t.Errorf("metrics served on %s, want a loopback address", u.Host)
	}
	api, _ := url.Parse(dev.base)
	if u.Port() == api.Port() {
		t.Errorf("metrics on the API port %s", u.Port())
	}
	// A request, so the request series have a sample.
	if code, _ := httpGet(t, dev.base+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz answered %d", code)
	}
	code, body := httpGet(t, metrics)
	if code != http.StatusOK {
		t.Fatalf("GET %s answered %d", metrics, code)
	}
	for _, series := range []string{"acv_http_requests_total{", "acv_outbox_entries", "go_goroutines"} {
		if !strings.Contains(body, series) {
			t.Errorf("%s serves no %s", metrics, series)
		}
	}
	if code, _ := httpGet(t, dev.base+"/metrics"); code != http.StatusNotFound {
		t.Errorf("the API port answered /metrics with %d, want 404", code)
	}
	env := h.envVars("ACV_DEV_METRICS_URL", "ACV_DEV_PROMETHEUS_URL")
	if env["ACV_DEV_METRICS_URL"] != metrics {
		t.Errorf(".acv/env has ACV_DEV_METRICS_URL=%q, the banner %s", env["ACV_DEV_METRICS_URL"], metrics)
	}
	if env["ACV_DEV_PROMETHEUS_URL"] != "" {
		t.Errorf(".acv/env names a Prometheus (%s) that acv dev without --prometheus does not run", env["ACV_DEV_PROMETHEUS_URL"])
	}
	if code := h.stop(dev, syscall.SIGTERM); code != 0 {
		t.Errorf("acv dev exited with %d after SIGTERM", code)
	}
}

// acv dev's own listeners keep their address across restarts: the default while it is free,
// else the one the data directory used before while that is free, else a new free port.
func TestDevPortsStayAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	def := busy.Addr().String()
	listen := func() string {
		t.Helper()
		ln, err := loadDevPorts(dir).listen("metrics", "", def)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().String()
	}
	first := listen()
	if first == def {
		t.Fatalf("listened on the busy default %s", def)
	}
	if again := listen(); again != first {
		t.Errorf("with the default still busy, the restart listened on %s, before on %s", again, first)
	}
	picked, err := loadDevPorts(dir).pick("prometheus", "", def)
	if err != nil || picked == def {
		t.Fatalf("picked %s (%v) for a server while the default %s is busy", picked, err, def)
	}
	busy.Close()
	if got := listen(); got != def {
		t.Errorf("with the default free again, listened on %s, want %s", got, def)
	}
}

// `make run PROMETHEUS=1` runs Prometheus with the deployment's rules (found through
// deploy/prometheus/prometheus.yml's rule_files), prints its address and writes it to
// .acv/env: every target it scrapes is up, and it loaded and evaluates every rule. A load test
// against that stack (loadtest/run.sh with STACK=running, which takes the stack from .acv/env,
// into a LOADTEST_DIR that does not exist yet) registers the load generator with it, so the
// load run's own series show on the same Prometheus.
func TestDevPrometheusScrapesTheStack(t *testing.T) {
	if testing.Short() {
		t.Skip("builds acv and acvload and runs acv dev with Prometheus")
	}
	bins := devBinaries(t)
	deployConfig, err := filepath.Abs("../../deploy/prometheus/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	setup, err := readDeployPrometheus(deployConfig)
	if err != nil {
		t.Fatal(err)
	}
	h := newDevHarness(t, bins.acv, "acv-devprom-")
	h.args = []string{"--prometheus", "--prometheus-addr", "127.0.0.1:0", "--prometheus-config", deployConfig}
	start := time.Now()
	dev := h.start()
	prom := h.waitLine(dev, prometheusLine)[1]
	env := h.envVars("ACV_DEV_PROMETHEUS_URL", "ACV_DEV_PROMETHEUS_TARGETS", "ACV_DEV_METRICS_URL")
	if env["ACV_DEV_PROMETHEUS_URL"] != prom || env["ACV_DEV_PROMETHEUS_TARGETS"] == "" {
		t.Errorf(".acv/env has ACV_DEV_PROMETHEUS_URL=%q and ACV_DEV_PROMETHEUS_TARGETS=%q; the banner says %s",
			env["ACV_DEV_PROMETHEUS_URL"], env["ACV_DEV_PROMETHEUS_TARGETS"], prom)
	}
	metricsHost := strings.TrimSuffix(strings.TrimPrefix(env["ACV_DEV_METRICS_URL"], "http://"), "/metrics")
	testkit.WaitFor(t, 60*time.Second, "every target up", func() (bool, string) {
		targets := promTargets(t, prom)
		up := map[string]bool{}
		for _, tg := range targets {
			if tg.Health != "up" {
				return false, fmt.Sprintf("%s (%s) is %s %s", tg.ScrapeURL, tg.Labels["job"], tg.Health, tg.LastError)
			}
			up[tg.Labels["job"]+" "+tg.Labels["instance"]] = true
		}
		return up[devJobAPI+" "+metricsHost] && up["prometheus "+strings.TrimPrefix(prom, "http://")], fmt.Sprintf("targets %v", up)
	})
	testkit.WaitFor(t, 60*time.Second, "every rule of the deployment loaded and evaluated", func() (bool, string) {
		rules := promRules(t, prom)
		if len(rules) != setup.rules {
			return false, fmt.Sprintf("%d rules loaded, the deployment's files hold %d", len(rules), setup.rules)
		}
		for _, r := range rules {
			if r.Health != "ok" {
				return false, fmt.Sprintf("rule %s is %s %s", r.Name, r.Health, r.LastError)
			}
		}
		return true, ""
	})
	t.Logf("%s Prometheus at %s: targets up, %d rules evaluated", since(start), prom, setup.rules)

	// A short load test on this stack: it must find the stack through .acv/env alone.
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ltDir := filepath.Join(h.work, "loadtest", "not-yet")
	lt := exec.Command(filepath.Join(root, "loadtest", "run.sh"), "readmix")
	lt.Env = append(devEnv(), "STACK=running", "ACV_DEV_ENV="+filepath.Join(h.data, "env"), "DURATION=2s", "READMIX_RATE=10",
		"LOADTEST_DIR="+ltDir, "ACV="+bins.acv, "ACVLOAD="+bins.acvload, "BASE_URL=http://127.0.0.1:1")
	var stdout, stderr bytes.Buffer
	lt.Stdout, lt.Stderr = &stdout, &stderr
	lt.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := runWithin(lt, 90*time.Second); err != nil {
		t.Fatalf("loadtest/run.sh readmix on the running stack: %v\n%s\n%s", err, stdout.String(), tail(stderr.Bytes()))
	}
	if !regexp.MustCompile(`(?m)^readmix\s+\d+ .* pass$`).Match(stdout.Bytes()) {
		t.Errorf("run.sh printed no passing readmix line:\n%s", stdout.String())
	}
	if !strings.Contains(stderr.String(), "acv at "+dev.base+",") {
		t.Errorf("run.sh did not load the stack .acv/env names (%s):\n%s", dev.base, tail(stderr.Bytes()))
	}
	if _, err := os.Stat(filepath.Join(ltDir, "results", "acvload.json")); err != nil {
		t.Errorf("the missing LOADTEST_DIR was not made and filled: %v", err)
	}
	series := promQuery(t, prom, `acv_loadtest_requests_total{job="acvload",scenario="readmix"}`)
	if len(series) == 0 {
		t.Errorf("Prometheus at %s has no acv_loadtest_requests_total of the load generator:\n%s", prom, tail(stderr.Bytes()))
	}
	t.Logf("%s load test done; Prometheus holds %d of its request series", since(start), len(series))

	if code := h.stop(dev, syscall.SIGTERM); code != 0 {
		t.Errorf("acv dev exited with %d after SIGTERM", code)
	}
	if _, err := http.Get(prom + "/-/ready"); err == nil {
		t.Errorf("Prometheus still answers at %s after acv dev stopped", prom)
	}
}

// A load test with STACK=running and no make run to use says so and stops; it never tries a
// default port, which may belong to something else.
func TestDevLoadtestOnRunningStackNeedsItsEnv(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lt := exec.Command(filepath.Join(root, "loadtest", "run.sh"), "readmix")
	lt.Env = append(devEnv(), "STACK=running", "ACV_DEV_ENV="+filepath.Join(dir, "no-such", "env"), "LOADTEST_DIR="+filepath.Join(dir, "lt"),
		"ACV=/bin/true", "ACVLOAD=/bin/true")
	out, err := lt.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "STACK=running uses the stack of make run") {
		t.Errorf("run.sh with STACK=running and no env file: %v\n%s", err, out)
	}
}

// devBins are the binaries the dev tests run: acv (acvBinary's, built once per test binary)
// and acvload, built once too.
type devBins struct{ acv, acvload string }

var (
	acvloadBuild sync.Once
	acvloadBin   string
	acvloadErr   string
)

func devBinaries(t *testing.T) devBins {
	t.Helper()
	acvloadBuild.Do(func() {
		dir, err := os.MkdirTemp("", "acv-devbin-")
		if err != nil {
			acvloadErr = err.Error()
			return
		}
		acvloadBin = filepath.Join(dir, "acvload")
		if b, err := exec.Command("go", "build", "-o", acvloadBin, "../acvload").CombinedOutput(); err != nil {
			acvloadErr = fmt.Sprintf("go build ../acvload: %v\n%s", err, b)
		}
	})
	if acvloadErr != "" {
		t.Fatal(acvloadErr)
	}
	return devBins{acv: acvBinary(t), acvload: acvloadBin}
}

// waitLine waits for a line of acv dev's output (the banner's lines come one write each).
func (h *devHarness) waitLine(p *devProcess, re *regexp.Regexp) []string {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _ := os.ReadFile(p.log)
		if m := re.FindStringSubmatch(string(out)); m != nil {
			return m
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("acv dev printed no line matching %s:\n%s", re, tail(out))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// envVars are the values the data directory's env file gives the names, as a shell that
// sources it sees them.
func (h *devHarness) envVars(names ...string) map[string]string {
	h.t.Helper()
	script := `source "$1"`
	for _, n := range names {
		script += fmt.Sprintf(` && printf '%%s\n' "${%s:-}"`, n)
	}
	sh := exec.Command("bash", "-c", script, "bash", filepath.Join(h.data, "env"))
	sh.Env = devEnv()
	for _, n := range names {
		sh.Env = append(sh.Env, n+"=")
	}
	out, err := sh.Output()
	if err != nil {
		h.t.Fatalf("source %s: %v", filepath.Join(h.data, "env"), err)
	}
	vals := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	m := map[string]string{}
	for i, n := range names {
		if i < len(vals) {
			m[n] = vals[i]
		}
	}
	return m
}

func httpGet(t *testing.T, u string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// runWithin runs cmd, killing it after d.
func runWithin(cmd *exec.Cmd, d time.Duration) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("still running after %s", d)
	}
}

type promTarget struct {
	Labels    map[string]string `json:"labels"`
	ScrapeURL string            `json:"scrapeUrl"`
	Health    string            `json:"health"`
	LastError string            `json:"lastError"`
}

type promRule struct {
	Name      string `json:"name"`
	Health    string `json:"health"`
	LastError string `json:"lastError"`
}

// promAPI reads a Prometheus API answer's data into out.
func promAPI(t *testing.T, base, path string, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s%s: %v", base, path, err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
		Error  string          `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Status != "success" {
		t.Fatalf("GET %s%s: %v %s %s", base, path, err, body.Status, body.Error)
	}
	if err := json.Unmarshal(body.Data, out); err != nil {
		t.Fatal(err)
	}
}

func promTargets(t *testing.T, base string) []promTarget {
	var d struct {
		ActiveTargets []promTarget `json:"activeTargets"`
	}
	promAPI(t, base, "/api/v1/targets?state=active", &d)
	return d.ActiveTargets
}

func promRules(t *testing.T, base string) []promRule {
	var d struct {
		Groups []struct {
			Rules []promRule `json:"rules"`
		} `json:"groups"`
	}
	promAPI(t, base, "/api/v1/rules", &d)
	var out []promRule
	for _, g := range d.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

func promQuery(t *testing.T, base, q string) []json.RawMessage {
	var d struct {
		Result []json.RawMessage `json:"result"`
	}
	promAPI(t, base, "/api/v1/query?query="+url.QueryEscape(q), &d)
	return d.Result
}
