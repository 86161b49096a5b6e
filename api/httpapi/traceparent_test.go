package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/api/httpapi"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// A verify's log event carries the request's trace context only when the trace is sampled: an
// unsampled trace would carry 55 bytes through Redis and Kafka and make the relay and the
// consumer start a span per event that nobody records.
func TestEventTraceParentOnlyWhenSampled(t *testing.T) {
	const caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-"
	for _, tc := range []struct {
		name    string
		sampler sdktrace.Sampler
		header  string // the caller's traceparent; none when ""
		want    bool
	}{
		{"tracing off", sdktrace.NeverSample(), "", false},
		{"tracing off, sampled caller", sdktrace.NeverSample(), caller + "01", false},
		{"every request sampled", sdktrace.AlwaysSample(), "", true},
		{"caller sampled", sdktrace.ParentBased(sdktrace.NeverSample()), caller + "01", true},
		{"caller not sampled", sdktrace.ParentBased(sdktrace.AlwaysSample()), caller + "00", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(tc.sampler))
			t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
			e.reconfigure(t, func(c *httpapi.Config) { c.Tracer = tp })
			e.addCode(contract.CodeRecord{ID: codeID1, ProjectID: projectA, Code: "SPRING-1", CreatedAt: now - 60})
			r := req{method: http.MethodPost, path: verifyPath(projectA), body: []byte(`{"code":"SPRING-1"}`), nonce: newNonce()}
			if tc.header != "" {
				r.header = map[string]string{"traceparent": tc.header}
			}
			if w := e.do(r); w.Code != http.StatusOK {
				t.Fatalf("%d %s", w.Code, w.Body)
			}
			ops := e.hot.Calls("Verify")
			if len(ops) != 1 {
				t.Fatalf("hot-path calls %+v, want one Verify", ops)
			}
			got := ops[0].Op.TraceParent
			if !tc.want {
				if got != "" {
					t.Fatalf("event traceparent %q, want none", got)
				}
				return
			}
			parts := strings.Split(got, "-")
			if len(parts) != 4 || parts[0] != "00" || len(parts[1]) != 32 || len(parts[2]) != 16 || parts[3] != "01" {
				t.Fatalf("event traceparent %q, want a sampled W3C traceparent", got)
			}
			if tc.header != "" && parts[1] != strings.Split(tc.header, "-")[1] {
				t.Fatalf("event traceparent %q is not in the caller's trace %q", got, tc.header)
			}
		})
	}
}
