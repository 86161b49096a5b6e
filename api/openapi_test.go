package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"github.com/acv/acv/api"
	"github.com/acv/acv/api/httpapi"
	"github.com/acv/acv/internal/testkit"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
)

// unused stands in for the stores: the routes under test here never reach them, and a call
// would panic on the nil interface.
type unused struct {
	httpapi.Records
	httpapi.HotPath
}

func newServer(t *testing.T) *httpapi.Server {
	t.Helper()
	srv, err := httpapi.New(httpapi.Config{Records: unused{}, HotPath: unused{},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// TestOpenAPIServedWithoutAuth: GET /openapi.yaml answers the embedded document to a request
// without any authentication header, so a client or a tool can learn the API before it holds
// a key.
func TestOpenAPIServedWithoutAuth(t *testing.T) {
	w := httptest.NewRecorder()
	newServer(t).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/openapi.yaml", nil))
	if w.Code != http.StatusOK {
		t.Fatalf("status %d, want 200; body %s", w.Code, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/yaml" {
		t.Errorf("Content-Type %q, want application/yaml", ct)
	}
	if !bytes.Equal(w.Body.Bytes(), api.OpenAPI()) {
		t.Error("the body is not the embedded api/openapi.yaml")
	}
}

// TestOpenAPICopy: a caller changing what OpenAPI returned does not change what is served.
func TestOpenAPICopy(t *testing.T) {
	b := api.OpenAPI()
	b[0] = 'X'
	if api.OpenAPI()[0] == 'X' {
		t.Error("OpenAPI returned the embedded bytes themselves")
	}
}

func model(t *testing.T) (validator.Validator, *v3.Document) {
	t.Helper()
	doc, err := libopenapi.NewDocument(api.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return v, &m.Model
}

// TestOpenAPIDocument: the document is valid OpenAPI 3.1 (checked against the specification's
// own schema) and describes exactly the routes the server registers.
func TestOpenAPIDocument(t *testing.T) {
	v, m := model(t)
	if m.Version != "3.1.0" {
		t.Errorf("openapi %q, want 3.1.0", m.Version)
	}
	if ok, errs := v.ValidateDocument(); !ok {
		for _, e := range errs {
			t.Errorf("invalid document: %s: %s", e.Message, e.Reason)
			for _, s := range e.SchemaValidationErrors {
				t.Errorf("  %s at %s", s.Reason, s.FieldPath)
			}
		}
	}
	var got []string
	for path, item := range m.Paths.PathItems.FromOldest() {
		for method := range item.GetOperations().FromOldest() {
			got = append(got, strings.ToUpper(method)+" "+path)
		}
	}
	sort.Strings(got)
	// The routes of httpapi.New, /readyz aside: its body is an operator's report, not client API.
	want := []string{
		"GET /api/v1/projects/{project_id}",
		"GET /api/v1/projects/{project_id}/codes",
		"GET /api/v1/projects/{project_id}/codes/by-code/{code}",
		"GET /api/v1/projects/{project_id}/codes/{code_id}",
		"GET /api/v1/projects/{project_id}/statistics",
		"GET /healthz",
		"GET /openapi.yaml",
		"POST /api/v1/projects/{project_id}/codes/reactivate",
		"POST /api/v1/projects/{project_id}/codes/verify",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("operations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestOpenAPIExamples: every response example of the document is a response the document
// accepts (with the headers it requires), so the examples teach nothing the schemas forbid.
func TestOpenAPIExamples(t *testing.T) {
	v, m := model(t)
	n := 0
	for path, item := range m.Paths.PathItems.FromOldest() {
		target := strings.NewReplacer("{project_id}", "01932b6e4f3a7c1d9e2f3a4b5c6d7e8f",
			"{code_id}", "01932b6e7a1c7d2e8f3a4b5c6d7e8f90", "{code}", "SPRING-2024-0001").Replace(path)
		for method, op := range item.GetOperations().FromOldest() {
			for status, resp := range op.Responses.Codes.FromOldest() {
				for mediaType, content := range resp.Content.FromOldest() {
					examples := map[string]any{}
					if content.Example != nil {
						var ex any
						if err := content.Example.Decode(&ex); err != nil {
							t.Fatal(err)
						}
						examples["example"] = ex
					}
					for name, ex := range content.Examples.FromOldest() {
						var val any
						if err := ex.Value.Decode(&val); err != nil {
							t.Fatal(err)
						}
						examples[name] = val
					}
					for name, ex := range examples {
						n++
						body, err := json.Marshal(ex)
						if err != nil {
							t.Fatal(err)
						}
						h := http.Header{"Content-Type": {mediaType}}
						for hn, hdr := range resp.Headers.FromOldest() {
							if hdr.Required {
								h.Set(hn, "1")
							}
						}
						req := httptest.NewRequest(strings.ToUpper(method), target, nil)
						code := 0
						for _, c := range status {
							code = code*10 + int(c-'0')
						}
						r := &http.Response{StatusCode: code, Header: h, Body: io.NopCloser(bytes.NewReader(body)), Request: req}
						if ok, errs := v.ValidateHttpResponse(req, r); !ok {
							for _, e := range errs {
								t.Errorf("%s %s %s example %q: %s: %s", method, path, status, name, e.Message, e.Reason)
								for _, s := range e.SchemaValidationErrors {
									t.Errorf("  %s at %s", s.Reason, s.FieldPath)
								}
							}
						}
					}
				}
			}
		}
	}
	if n < 20 {
		t.Errorf("checked %d examples; the document has more", n)
	}
}

// TestOpenAPICheck: the stacks' response validator accepts a response the document describes,
// records one it does not (naming the request and the mismatch), matches a path sent with an
// opaque URL (percent-encoding untouched) and lets requests outside the document pass
// unchecked.
func TestOpenAPICheck(t *testing.T) {
	const pid = "01932b6e4f3a7c1d9e2f3a4b5c6d7e8f"
	answers := map[string]string{
		"/api/v1/projects/" + pid + "/codes/by-code/A%2FB": `{"detail":"Code not found"}`,
		"/api/v1/projects/" + pid + "/statistics":          `{"project_id":"` + pid + `","total_codes":"many"}`,
		"/metrics": "# not JSON",
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, _, _ := strings.Cut(r.RequestURI, "?")
		body, ok := answers[path]
		if !ok {
			t.Errorf("unexpected request %s", r.RequestURI)
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		if strings.Contains(path, "by-code") {
			w.WriteHeader(http.StatusNotFound)
		} else {
			w.Header().Set("X-RateLimit-Limit", "0")
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.Header().Set("X-RateLimit-Reset", "0")
		}
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)

	rec := &recordingTB{TB: t}
	check := testkit.NewOpenAPICheck(rec, nil)
	hc := &http.Client{Transport: check}
	get := func(path string) string {
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.URL.Opaque = path
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for path, want := range answers {
		if got := get(path); got != want {
			t.Errorf("%s: the caller read %q, want %q", path, got, want)
		}
	}
	if got := check.Checked(); got != 2 {
		t.Errorf("checked %d responses, want 2 (/metrics is outside the document)", got)
	}
	f := check.Failures()
	if len(f) != 1 || !strings.Contains(f[0], "/statistics answered 200") || !strings.Contains(f[0], "total_codes") {
		t.Fatalf("failures %q, want one naming the statistics answer and total_codes", f)
	}
	rec.runCleanups()
	if len(rec.errors) != 1 || !strings.Contains(rec.errors[0], "does not match api/openapi.yaml") {
		t.Errorf("the test was failed with %q, want one error", rec.errors)
	}
}

// recordingTB is a testing.TB whose errors and cleanups are kept, to see what NewOpenAPICheck
// would do to a test.
type recordingTB struct {
	testing.TB
	errors   []string
	cleanups []func()
}

func (r *recordingTB) Helper()          {}
func (r *recordingTB) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recordingTB) Errorf(format string, args ...any) {
	r.errors = append(r.errors, strings.TrimSpace(fmt.Sprintf(format, args...)))
}

func (r *recordingTB) runCleanups() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}
