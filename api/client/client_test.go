package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acv/acv/api/client"
	"github.com/acv/acv/api/contract"
)

const (
	keyID  = "0123456789abcdef0123456789abcdef"
	secret = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	pid    = "fedcba9876543210fedcba9876543210"
)

// seen is one request as the test server received it.
type seen struct {
	method, path, query, idem string
	body                      []byte
}

// server answers every endpoint after checking the request's signature the way the service
// does, and records what it received.
func server(t *testing.T, got *[]seen) *client.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		path, query, _ := strings.Cut(r.RequestURI, "?")
		if r.Header.Get("X-API-Key") != keyID || !contract.NewVerifier(secret).Verify(r.Header.Get("X-Signature"),
			r.Method, path, query, contract.BodySHA256(body), r.Header.Get("X-Timestamp"), r.Header.Get("X-Nonce")) {
			// The service's answer: the sentence, then the string to sign it built.
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(contract.ErrorBody{Detail: "Invalid API key or signature: " + contract.ExplainSignature(
				r.Method, path, query, contract.BodySHA256(body), r.Header.Get("X-Timestamp"), r.Header.Get("X-Nonce"))})
			return
		}
		if r.Header.Get("X-Nonce") == "" {
			t.Errorf("%s %s sent without X-Nonce", r.Method, path)
		}
		*got = append(*got, seen{r.Method, path, query, r.Header.Get("Idempotency-Key"), body})
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(path, "/codes/verify"):
			_, _ = w.Write([]byte(`{"success":true,"code_id":"c1","code":"A","verified_at":1,"message":"ok","error_code":null}`))
		case strings.HasSuffix(path, "/codes/reactivate"):
			_, _ = w.Write([]byte(`{"success":false,"code_id":"c1","code":"A","reactivated_at":null,"message":"Code is not used","error_code":"CODE_ALREADY_UNUSED"}`))
		case strings.HasSuffix(path, "/codes"):
			_, _ = w.Write([]byte(`{"items":[{"id":"c1","code":"A"}],"total":1,"page":2,"page_size":5,"total_pages":1}`))
		case strings.Contains(path, "/codes/by-code/"), strings.Contains(path, "/codes/"):
			_, _ = w.Write([]byte(`{"id":"c1","code":"A/B","verification_logs":[{"id":"l1","result":"success"}]}`))
		default:
			_, _ = w.Write([]byte(`{"id":"` + pid + `","name":"Shop","status":true,"statistics":{"total_codes":3}}`))
		}
	}))
	t.Cleanup(srv.Close)
	return &client.Client{BaseURL: srv.URL, KeyID: keyID, Secret: secret, HTTP: srv.Client()}
}

// Every method sends a correctly signed request to the contract's path and decodes the answer.
func TestClientCallsEveryEndpoint(t *testing.T) {
	var got []seen
	c := server(t, &got)
	ctx := context.Background()

	p, err := c.Project(ctx, pid)
	if err != nil || p.Name != "Shop" || p.Statistics == nil || p.Statistics.TotalCodes != 3 {
		t.Fatalf("project %+v %v", p, err)
	}
	page, err := c.ListCodes(ctx, pid, client.ListParams{Page: 2, PageSize: 5, Status: "used", Search: "a b"})
	if err != nil || page.Total != 1 || len(page.Items) != 1 || page.Page != 2 {
		t.Fatalf("list %+v %v", page, err)
	}
	code, err := c.CodeByValue(ctx, pid, "A/B")
	if err != nil || code.Code != "A/B" || len(code.VerificationLogs) != 1 {
		t.Fatalf("by value %+v %v", code, err)
	}
	code, err = c.CodeByID(ctx, pid, "c1")
	if err != nil || code.ID != "c1" {
		t.Fatalf("by id %+v %v", code, err)
	}
	by := "till-1"
	v, _, err := c.Verify(ctx, pid, contract.VerifyRequest{Code: "A", VerifiedBy: &by}, client.Options{IdempotencyKey: "order-1"})
	if err != nil || !v.Success || v.CodeID == nil || *v.CodeID != "c1" {
		t.Fatalf("verify %+v %v", v, err)
	}
	reason := "refund"
	r, _, err := c.Reactivate(ctx, pid, contract.ReactivateRequest{Code: "A", Reason: &reason}, client.Options{})
	if err != nil || r.Success || r.ErrorCode == nil || *r.ErrorCode != string(contract.CodeAlreadyUnused) {
		t.Fatalf("reactivate %+v %v", r, err)
	}

	base := "/api/v1/projects/" + pid
	want := []seen{
		{method: "GET", path: base},
		{method: "GET", path: base + "/codes", query: "page=2&page_size=5&search=a+b&status=used"},
		{method: "GET", path: base + "/codes/by-code/A%2FB"},
		{method: "GET", path: base + "/codes/c1"},
		{method: "POST", path: base + "/codes/verify", idem: "order-1", body: []byte(`{"code":"A","verified_by":"till-1"}`)},
		{method: "POST", path: base + "/codes/reactivate", body: []byte(`{"code":"A","reactivated_by":null,"reason":"refund"}`)},
	}
	if len(got) != len(want) {
		t.Fatalf("server saw %d requests, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.method != w.method || g.path != w.path || g.query != w.query || g.idem != w.idem || string(g.body) != string(w.body) {
			t.Errorf("request %d: %s %s?%s idem=%q body=%s; want %s %s?%s idem=%q body=%s",
				i, g.method, g.path, g.query, g.idem, g.body, w.method, w.path, w.query, w.idem, w.body)
		}
	}
}

// A non-2xx answer is an *client.Error with the status and the contract's detail.
func TestClientReturnsTheDetail(t *testing.T) {
	var got []seen
	c := server(t, &got)
	c.Secret = strings.Repeat("b", 64) // the server refuses the signature
	_, err := c.Project(context.Background(), pid)
	var e *client.Error
	// The detail arrives whole: its quotes and \n escapes survive the JSON decoding.
	if !errors.As(err, &e) || e.Status != http.StatusUnauthorized || !strings.HasPrefix(e.Detail, "Invalid API key or signature: X-Signature must be") ||
		!strings.Contains(e.Detail, `of "GET\n/api/v1/projects/`+pid+`\n\n`+contract.EmptyBodySHA256+`\n`) {
		t.Fatalf("error %v, want HTTP 401 with the detail", err)
	}
	if len(got) != 0 {
		t.Fatal("the refused request reached the handler")
	}
}

// A client sends a fresh X-Nonce by default, so two identical verifies within one second are
// two requests, not a replay; NoNonce signs the original five-line string without one.
func TestClientNonceByDefault(t *testing.T) {
	var nonces []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		path, query, _ := strings.Cut(r.RequestURI, "?")
		n := r.Header.Get("X-Nonce")
		if !contract.NewVerifier(secret).Verify(r.Header.Get("X-Signature"), r.Method, path, query,
			contract.BodySHA256(body), r.Header.Get("X-Timestamp"), n) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		nonces = append(nonces, n)
		_, _ = w.Write([]byte(`{"success":true,"message":"ok"}`))
	}))
	defer srv.Close()
	ctx := context.Background()
	req := contract.VerifyRequest{Code: "A"}
	c := &client.Client{BaseURL: srv.URL, KeyID: keyID, Secret: secret, HTTP: srv.Client()}
	for i := 0; i < 2; i++ {
		if _, _, err := c.Verify(ctx, pid, req, client.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	if len(nonces) != 2 || nonces[0] == "" || nonces[0] == nonces[1] || !contract.ValidNonce(nonces[0]) {
		t.Fatalf("default client sent nonces %q; want two distinct valid ones", nonces)
	}
	nonces = nil
	c.NoNonce = true
	if _, _, err := c.Verify(ctx, pid, req, client.Options{}); err != nil {
		t.Fatal(err)
	}
	if len(nonces) != 1 || nonces[0] != "" {
		t.Fatalf("NoNonce client sent %q; want no X-Nonce (five-line signature)", nonces)
	}
}

// With Retries, a verify that lost its connection, then got a 503, is sent a third time: every
// attempt re-signed with a fresh nonce, all under the one Idempotency-Key the client drew, so
// the server can answer a retry of a request it ran with the stored outcome. A GET is retried
// without one; a 4xx is final.
func TestClientRetriesUnderOneIdempotencyKey(t *testing.T) {
	type attempt struct{ idem, nonce, path string }
	var (
		mu       sync.Mutex // the handler's goroutines and the test share what follows
		attempts []attempt
		drop     = 1 // connections to drop before answering
		busy     = 1 // 503s to answer after that
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		path, query, _ := strings.Cut(r.RequestURI, "?")
		if !contract.NewVerifier(secret).Verify(r.Header.Get("X-Signature"), r.Method, path, query,
			contract.BodySHA256(body), r.Header.Get("X-Timestamp"), r.Header.Get("X-Nonce")) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		attempts = append(attempts, attempt{r.Header.Get("Idempotency-Key"), r.Header.Get("X-Nonce"), path})
		switch {
		case strings.HasSuffix(path, "/missing"):
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"detail":"Code not found"}`))
		case drop > 0:
			drop--
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close() // the answer is lost
			}
		case busy > 0:
			busy--
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"detail":"Service temporarily unavailable"}`))
		default:
			_, _ = w.Write([]byte(`{"success":true,"code_id":"c1","code":"A","verified_at":1,"message":"ok","error_code":null}`))
		}
	}))
	defer srv.Close()
	// got is what the server received so far; reset clears it and drops the next n connections.
	got := func() []attempt {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(attempts)
	}
	reset := func(n int) {
		mu.Lock()
		defer mu.Unlock()
		attempts, drop = nil, n
	}
	var told []int
	c := &client.Client{BaseURL: srv.URL, KeyID: keyID, Secret: secret, HTTP: srv.Client(),
		Retries: 3, RetryBackoff: time.Millisecond,
		OnRetry: func(_, _ string, n int, err error) { told = append(told, n) }}
	ctx := context.Background()
	res, _, err := c.Verify(ctx, pid, contract.VerifyRequest{Code: "A"}, client.Options{})
	if err != nil || !res.Success {
		t.Fatalf("verify after a lost answer and a 503: %+v, %v", res, err)
	}
	if len(got()) != 3 || len(told) != 2 {
		t.Fatalf("%d attempts, %d retries told; want 3 and 2", len(got()), len(told))
	}
	for i, a := range got() {
		if a.idem == "" || a.idem != got()[0].idem {
			t.Errorf("attempt %d sent Idempotency-Key %q, want one key for the call (%q)", i, a.idem, got()[0].idem)
		}
		for _, b := range got()[:i] {
			if a.nonce == b.nonce {
				t.Errorf("attempt %d reused the nonce %s", i, a.nonce)
			}
		}
	}
	// The caller's own key is kept.
	reset(1)
	if _, _, err := c.Verify(ctx, pid, contract.VerifyRequest{Code: "A"}, client.Options{IdempotencyKey: "order-42"}); err != nil {
		t.Fatal(err)
	}
	if len(got()) != 2 || got()[0].idem != "order-42" || got()[1].idem != "order-42" {
		t.Errorf("attempts %+v, want two under order-42", got())
	}
	// A GET is retried as it is; a 404 is an answer, not retried.
	reset(1)
	if _, err := c.Project(ctx, pid); err != nil {
		t.Fatal(err)
	}
	if len(got()) != 2 || got()[1].idem != "" {
		t.Errorf("GET attempts %+v, want two without an Idempotency-Key", got())
	}
	reset(0)
	_, err = c.CodeByValue(ctx, pid, "missing")
	var e *client.Error
	if !errors.As(err, &e) || e.Status != http.StatusNotFound || len(got()) != 1 {
		t.Errorf("404: %v after %d attempts, want the 404 after one", err, len(got()))
	}
	// Without Retries nothing is sent twice.
	c.Retries = 0
	reset(1)
	if _, _, err := c.Verify(ctx, pid, contract.VerifyRequest{Code: "A"}, client.Options{}); err == nil || len(got()) != 1 || got()[0].idem != "" {
		t.Errorf("no retries: %v after %d attempts (%+v), want the lost answer's error after one without a key", err, len(got()), got())
	}
}
