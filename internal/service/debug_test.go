package service_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/service"
	"github.com/acv/acv/internal/testkit"
)

// A pipeline-only process serves no API, yet it must be scrapable and probeable: its debug
// listener answers /metrics with the pipeline's series and /readyz with its dependencies.
func TestPipelineWorkerIsScrapable(t *testing.T) {
	s := testkit.NewStack(t)
	port, err := localenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.Config
	cfg.Roles = service.Roles{Relay: true, Consumer: true}
	cfg.DebugAddr = fmt.Sprintf("127.0.0.1:%d", port)
	s.RunClean("pipeline worker", cfg, nil)
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + cfg.DebugAddr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	testkit.WaitFor(t, 20*time.Second, "the debug listener", func() (bool, string) {
		code, body := get("/readyz")
		return code == http.StatusOK, fmt.Sprintf("%d %s", code, body)
	})
	code, body := get("/metrics")
	for _, series := range []string{"acv_outbox_entries", "acv_dependency_up{dependency=\"kafka\"} 1", "acv_relay_errors_total", "acv_consumer_last_commit_timestamp_seconds"} {
		if code != http.StatusOK || !strings.Contains(body, series) {
			t.Fatalf("/metrics (%d) lacks %s", code, series)
		}
	}
	if strings.Contains(body, "acv_http_requests_in_flight") {
		t.Fatal("a pipeline-only process exports API series")
	}
}

// The public API port serves no metrics and no profiles: /metrics and /debug/pprof answer 404
// with the contract's body there, and 200 on the replica's debug listener (ACV_DEBUG_ADDR).
// The load balancer's probes stay on the API port.
func TestMetricsAndProfilesOnlyOnDebugAddr(t *testing.T) {
	s := testkit.NewStack(t)
	base, debug := s.StartAPIWithDebug()
	get := func(url string) testkit.Response {
		resp, err := s.HTTP.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return testkit.Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
	}
	testkit.WaitFor(t, 20*time.Second, "the debug listener", func() (bool, string) {
		resp, err := s.HTTP.Get(debug + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	for _, p := range []string{"/metrics", "/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/heap"} {
		WantDetail(t, get(base+p), http.StatusNotFound, "not found")
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if r := get(base + p); r.Status != http.StatusOK {
			t.Errorf("API port %s: %d %s", p, r.Status, r.Body)
		}
	}
	if r := get(debug + "/metrics"); r.Status != http.StatusOK || !strings.Contains(string(r.Body), "acv_http_requests_total") {
		t.Errorf("debug /metrics: %d, acv_http_requests_total missing", r.Status)
	}
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/cmdline"} {
		if r := get(debug + p); r.Status != http.StatusOK {
			t.Errorf("debug %s: %d", p, r.Status)
		}
	}
}
