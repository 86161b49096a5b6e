package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/acv/acv/api/client"
	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/testkit"
)

// TestOneVerifyIsOneTrace follows one verify from the HTTP request through the Lua call, the
// relay's Kafka publish and the consumer's Postgres write: every span shares the request's
// trace id, and the request's log lines carry it.
func TestOneVerifyIsOneTrace(t *testing.T) {
	s := testkit.NewStack(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	s.Config.Tracer = tp
	base := s.StartAPI()
	s.StartPipeline("relay")
	tn := s.NewTenant(nil, base)
	s.ImportCodes(tn.ProjectID, nil, "TRACE-ME")

	r, _, err := tn.Clients[0].Verify(context.Background(), tn.ProjectID, contract.VerifyRequest{Code: "TRACE-ME"}, client.Options{})
	if err != nil || !r.Success {
		t.Fatalf("verify: %+v %v", r, err)
	}
	testkit.WaitFor(t, 30*time.Second, "the log row", func() (bool, string) {
		n := s.LogCount(*r.CodeID)
		return n == 1, fmt.Sprintf("%d logs", n)
	})

	var root trace.SpanContext
	for _, sp := range exp.GetSpans() {
		if sp.Name == "POST /api/v1/projects/:project_id/codes/verify" {
			root = sp.SpanContext
		}
	}
	if !root.IsValid() {
		t.Fatalf("no span for the verify request among %d spans", len(exp.GetSpans()))
	}
	want := map[string]bool{"redis apply.lua": false, "kafka publish acv.verification-logs": false, "postgres write verification logs": false}
	var pgQueries int
	testkit.WaitFor(t, 10*time.Second, "every span of the trace", func() (bool, string) {
		for k := range want {
			want[k] = false
		}
		pgQueries = 0
		for _, sp := range exp.GetSpans() {
			if sp.SpanContext.TraceID() != root.TraceID() {
				continue
			}
			if _, ok := want[sp.Name]; ok {
				want[sp.Name] = true
			}
			if sp.InstrumentationScope.Name == "github.com/exaring/otelpgx" {
				pgQueries++
			}
		}
		for _, seen := range want {
			if !seen {
				return false, fmt.Sprintf("spans seen in the trace: %v, postgres queries %d", want, pgQueries)
			}
		}
		return pgQueries > 0, fmt.Sprintf("%d postgres query spans in the trace", pgQueries)
	})

	var found bool
	for _, line := range s.Logs.Lines() {
		var rec map[string]interface{}
		if json.Unmarshal([]byte(line), &rec) != nil || rec["msg"] != "request" {
			continue
		}
		if strings.HasSuffix(fmt.Sprint(rec["route"]), "/codes/verify") {
			found = rec["trace_id"] == root.TraceID().String()
		}
	}
	if !found {
		t.Fatal("the verify's access log line does not carry its trace id")
	}
}
