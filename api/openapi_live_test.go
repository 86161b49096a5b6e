package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/testkit"
)

// The live suite starts a real stack (testkit.Main stops its servers).
func TestMain(m *testing.M) { testkit.Main(m) }

// Schemathesis settings. The seed is fixed so a failure seen in CI is the run a developer gets
// locally (the service's own state, ids and times still differ between runs). The example
// budget keeps the run well under two minutes on two busy cores (about 30 s). To explore
// further by hand, ACV_SCHEMATHESIS_SEED picks another seed (or "random"),
// ACV_SCHEMATHESIS_EXAMPLES another budget, and ACV_SCHEMATHESIS_REPORT_DIR keeps the JUnit and
// NDJSON reports. One worker: with two, schemathesis's generator fails with "AST constructor
// recursion depth mismatch" when both threads parse its sources at once (Python 3.11), a
// runtime error rather than a finding.
const (
	schemathesisSeed        = "20240601"
	schemathesisMaxExamples = "40"
	schemathesisTimeout     = 4 * time.Minute
)

// TestSchemathesis runs schemathesis against a live service with every check it has: it
// generates valid and invalid requests from api/openapi.yaml (examples, boundary values, fuzzed
// data, unexpected methods, missing and invalid authentication) and checks each answer against
// the document. The requests carrying the tenant's key id are signed on their way by a proxy,
// whose responses also pass the stack's own OpenAPICheck.
func TestSchemathesis(t *testing.T) {
	st := testkit.Tool(t, "venv/bin/schemathesis")
	s := testkit.NewStack(t)
	base := s.StartAPI()
	s.StartPipeline("relay-x")
	tn := s.NewTenant(nil)
	values, ids := seedCodes(t, s, base, tn)
	proxy := signingProxy(t, base, tn.Key, s.HTTP.Transport)

	// Schemathesis found this once (a 500: the offset of the page overflowed in the store);
	// pinned here, as another seed may not draw it.
	var deepest struct {
		Items []json.RawMessage `json:"items"`
		Page  int64             `json:"page"`
	}
	s.Signer(t, base, tn.Key).Get(testkit.ProjectPath(tn.ProjectID)+"/codes", "page=9223372036854775807&page_size=100").
		Decode(t, http.StatusOK, &deepest)
	if len(deepest.Items) != 0 || deepest.Page != math.MaxInt64 {
		t.Errorf("the deepest page has %d items and page %d, want none and the page asked for", len(deepest.Items), deepest.Page)
	}

	dir := t.TempDir()
	cfg := filepath.Join(dir, "schemathesis.toml")
	if err := os.WriteFile(cfg, []byte(schemathesisConfig(tn, values, ids)), 0o600); err != nil {
		t.Fatal(err)
	}
	seed, examples := schemathesisSeed, schemathesisMaxExamples
	if v := os.Getenv("ACV_SCHEMATHESIS_SEED"); v != "" {
		seed = v
	}
	if v := os.Getenv("ACV_SCHEMATHESIS_EXAMPLES"); v != "" {
		examples = v
	}
	args := []string{"--config-file", cfg, "--no-color", "run", proxy + "/openapi.yaml",
		"--url", proxy, "--max-examples", examples,
		"--workers", "1", "--request-timeout", "15", "--generation-database", "none"}
	if seed != "random" {
		args = append(args, "--seed", seed)
	}
	if rd := os.Getenv("ACV_SCHEMATHESIS_REPORT_DIR"); rd != "" {
		// Every request and response of the run, to study what it covered.
		args = append(args, "--report", "junit,ndjson", "--report-dir", rd)
	}
	ctx, cancel := context.WithTimeout(context.Background(), schemathesisTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, st, args...)
	cmd.Dir = dir // hypothesis and the report write here, not into the checkout
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "COLUMNS=120")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start).Round(time.Second)
	if err != nil {
		t.Errorf("schemathesis (seed %s) found failures or could not run (%v, after %s); its report:\n%s", seed, err, took, out)
		return
	}
	t.Logf("schemathesis (seed %s, %s examples an operation, %s):\n%s", seed, examples, took, summary(out))
}

// seedCodes gives the tenant codes in every state, with values that need percent-encoding in a
// path, and returns their values and ids: schemathesis draws from them so requests reach
// existing codes (200 with logs, every outcome of verify and reactivate), not only unknown ones.
func seedCodes(t *testing.T, s *testkit.Stack, base string, tn *testkit.Tenant) (values, ids []string) {
	t.Helper()
	ctx := context.Background()
	values = []string{"SPRING-2024-0001", "SPRING-2024-0002", "ST-0001", "ST-0002", "ST-0003", "ST-0004",
		"ST/slash", "ST+plus", "ST space", "ST%25", "Ünïcödé-✓", "st-used", "st-disabled"}
	s.ImportCodes(tn.ProjectID, nil, values...)
	past := time.Now().Add(-time.Hour).Unix()
	s.ImportCodes(tn.ProjectID, &past, "st-expired")
	values = append(values, "st-expired")
	if err := s.Admin.SetCodeDisabled(ctx, tn.ProjectID, "st-disabled", true); err != nil {
		t.Fatal(err)
	}
	used := s.Signer(t, base, tn.Key).Post(testkit.VerifyPath(tn.ProjectID), map[string]string{"code": "st-used"}, nil)
	if used.Status != http.StatusOK {
		t.Fatalf("verify st-used: %d %s", used.Status, used.Body)
	}
	page, err := s.Admin.ListCodes(ctx, tn.ProjectID, contract.ListQuery{Page: 1, PageSize: 100}, time.Now().Unix())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range page.Items {
		ids = append(ids, c.ID)
	}
	return values, ids
}

// schemathesisConfig is the run's configuration: the tenant's key id for the ApiKey scheme
// (the proxy signs, so the other schemes get placeholders it replaces), the tenant's project in
// every path, and the seeded codes as a dictionary drawn from half the time.
func schemathesisConfig(tn *testkit.Tenant, values, ids []string) string {
	quote := func(vs []string) string {
		q := make([]string, len(vs))
		for i, v := range vs {
			q[i] = strconv.Quote(v)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	return fmt.Sprintf(`
[auth.openapi.ApiKey]
api_key = %q
[auth.openapi.Timestamp]
api_key = "0"
[auth.openapi.Signature]
api_key = "signed-by-the-proxy"

[dictionaries.codes]
values = %s
[dictionaries.ids]
values = %s

[parameters]
"path.project_id" = %q
"path.code" = { dictionary = "codes", probability = 0.5 }
"path.code_id" = { dictionary = "ids", probability = 0.5 }
"body.code" = { dictionary = "codes", probability = 0.5 }
`, tn.Key.ID, quote(values), quote(ids), tn.ProjectID)
}

// signingProxy is a reverse proxy to base that signs every request carrying key's id, over the
// exact bytes it forwards: schemathesis serializes the body and encodes the URL after the last
// hook it offers, so only something on the wire sees what to sign. The request line goes on
// as it came, still percent-encoded. Requests without the key id (schemathesis's probes of
// missing or invalid authentication) pass unsigned. Its answers pass through tr.
func signingProxy(t *testing.T, base string, key contract.APIKey, tr http.RoundTripper) string {
	t.Helper()
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	rp := &httputil.ReverseProxy{
		Transport: tr,
		ErrorLog:  log.New(testWriter{t}, "signing proxy: ", 0),
		Rewrite: func(pr *httputil.ProxyRequest) {
			path, query, _ := strings.Cut(pr.In.RequestURI, "?")
			pr.Out.URL = &url.URL{Scheme: target.Scheme, Host: target.Host, Opaque: path, RawQuery: query}
			pr.Out.Host = ""
			body, err := io.ReadAll(pr.In.Body)
			if err != nil {
				t.Errorf("signing proxy: read body of %s %s: %v", pr.In.Method, pr.In.RequestURI, err)
			}
			pr.Out.Body, pr.Out.ContentLength = http.NoBody, 0
			if len(body) > 0 {
				pr.Out.Body, pr.Out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
			}
			if pr.In.Header.Get("X-API-Key") != key.ID {
				return
			}
			ts, nonce := strconv.FormatInt(time.Now().Unix(), 10), testkit.Nonce()
			pr.Out.Header.Set("X-Timestamp", ts)
			pr.Out.Header.Set("X-Nonce", nonce)
			pr.Out.Header.Set("X-Signature", testkit.Sign(key.Secret,
				testkit.StringToSign(pr.In.Method, path, sortedQuery(query), body, ts, nonce)))
		},
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.URL
}

// sortedQuery is the QUERY line of the contract: the key=value pairs as sent, empty pieces
// dropped, sorted by key and then by value, joined by '&'.
func sortedQuery(raw string) string {
	var pairs []string
	for p := range strings.SplitSeq(raw, "&") {
		if p != "" {
			pairs = append(pairs, p)
		}
	}
	slices.SortStableFunc(pairs, func(a, b string) int {
		ka, va, _ := strings.Cut(a, "=")
		kb, vb, _ := strings.Cut(b, "=")
		if c := strings.Compare(ka, kb); c != 0 {
			return c
		}
		return strings.Compare(va, vb)
	})
	return strings.Join(pairs, "&")
}

// summary is the end of schemathesis's report: the per-operation results and the totals.
func summary(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for i, l := range lines {
		if strings.Contains(l, "SUMMARY") {
			return strings.Join(lines[i:], "\n")
		}
	}
	return string(out)
}

// testWriter sends a logger's lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
