package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
