package testkit

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
)

// Requests here are built and signed by hand from the contract's text, not with api/client:
// the tests prove that the bytes an SDK sends are accepted, independently of the code tested.

// Signer sends hand-built, hand-signed requests with one API key and reports to one (sub)test.
type Signer struct {
	t      testing.TB
	Base   string // e.g. http://127.0.0.1:8080
	KeyID  string
	Secret string
	HTTP   *http.Client
}

// NewSigner returns a signer of requests to base with the key, reporting to t.
func NewSigner(t testing.TB, hc *http.Client, base string, k contract.APIKey) *Signer {
	return &Signer{t: t, Base: base, KeyID: k.ID, Secret: k.Secret, HTTP: hc}
}

// Signer is a signer of requests to base with the key on the stack's HTTP client.
func (s *Stack) Signer(t testing.TB, base string, k contract.APIKey) *Signer {
	return NewSigner(t, s.HTTP, base, k)
}

// With returns the same signer reporting to another (sub)test.
func (sg *Signer) With(t testing.TB) *Signer {
	c := *sg
	c.t = t
	return &c
}

// Request is one request exactly as it goes on the wire.
type Request struct {
	Method string
	Path   string // the request path as sent, still percent-encoded
	Query  string // the raw query as sent, without '?'
	Body   []byte
	Nonce  string      // X-Nonce, signed as the sixth line; "" = no X-Nonce, five lines
	TS     int64       // X-Timestamp; 0 = now
	Header http.Header // extra headers
	Omit   string      // an authentication header to leave out
	Sig    string      // sent instead of the computed signature when not ""
	// SignQuery, when set, is the QUERY line signed instead of the pairs of Query sorted by key.
	SignQuery *string
	// Chunked sends the body without Content-Length.
	Chunked bool
}

// Response is an answer, read whole.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// StringToSign composes the contract's string to sign: METHOD, PATH, QUERY, the lowercase
// hex SHA-256 of the body and the timestamp on five lines, and the nonce on a sixth when sent.
func StringToSign(method, path, query string, body []byte, ts, nonce string) string {
	sum := sha256.Sum256(body)
	lines := []string{method, path, query, hex.EncodeToString(sum[:]), ts}
	if nonce != "" {
		lines = append(lines, nonce)
	}
	return strings.Join(lines, "\n")
}

// Sign is the lowercase hex HMAC-SHA256 of s keyed with the secret's hex text.
func Sign(secret, s string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(s))
	return hex.EncodeToString(m.Sum(nil))
}

// SortQuery sorts the key=value pairs of a raw query by key, keeping their encoding and, for
// a repeated key, the order they were sent in: the QUERY line of the string to sign.
func SortQuery(raw string) string {
	if raw == "" {
		return ""
	}
	pairs := strings.Split(raw, "&")
	key := func(p string) string { k, _, _ := strings.Cut(p, "="); return k }
	sort.SliceStable(pairs, func(i, j int) bool { return key(pairs[i]) < key(pairs[j]) })
	return strings.Join(pairs, "&")
}

// Nonce is a fresh X-Nonce.
func Nonce() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

// Build prepares the request; sending the same Request twice sends the same bytes twice.
func (sg *Signer) Build(r Request) *http.Request {
	sg.t.Helper()
	ts := r.TS
	if ts == 0 {
		ts = time.Now().Unix()
	}
	tss := strconv.FormatInt(ts, 10)
	q := SortQuery(r.Query)
	if r.SignQuery != nil {
		q = *r.SignQuery
	}
	sig := Sign(sg.Secret, StringToSign(r.Method, r.Path, q, r.Body, tss, r.Nonce))
	if r.Sig != "" {
		sig = r.Sig
	}
	var body io.Reader = http.NoBody
	if len(r.Body) > 0 {
		body = bytes.NewReader(r.Body)
		if r.Chunked {
			body = io.MultiReader(body) // an unknown length: sent chunked
		}
	}
	req, err := http.NewRequest(r.Method, sg.Base+"/", body)
	if err != nil {
		sg.t.Fatal(err)
	}
	// An Opaque URL is written to the request line verbatim: Go re-encodes nothing.
	req.URL.Opaque = r.Path
	req.URL.RawQuery = r.Query
	if len(r.Body) > 0 {
		req.Header.Set("Content-Type", "application/json")
	}
	h := map[string]string{"X-API-Key": sg.KeyID, "X-Timestamp": tss, "X-Signature": sig}
	if r.Nonce != "" {
		h["X-Nonce"] = r.Nonce
	}
	for k, v := range h {
		if k != r.Omit {
			req.Header.Set(k, v)
		}
	}
	for k, v := range r.Header {
		req.Header[k] = v
	}
	return req
}

// Send sends one request and reads the whole answer.
func (sg *Signer) Send(r Request) Response {
	sg.t.Helper()
	return Do(sg.t, sg.HTTP, sg.Build(r))
}

// Do sends a prepared request (Build's, perhaps altered) and reads the whole answer.
func Do(t testing.TB, hc *http.Client, req *http.Request) Response {
	t.Helper()
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.RequestURI(), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read answer of %s %s: %v", req.Method, req.URL.RequestURI(), err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// Get sends a signed GET with a fresh nonce.
func (sg *Signer) Get(path, query string) Response {
	sg.t.Helper()
	return sg.Send(Request{Method: http.MethodGet, Path: path, Query: query, Nonce: Nonce()})
}

// Post sends a signed POST of body (marshalled to JSON) with a fresh nonce.
func (sg *Signer) Post(path string, body any, hdr http.Header) Response {
	sg.t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		sg.t.Fatal(err)
	}
	return sg.Send(Request{Method: http.MethodPost, Path: path, Body: b, Nonce: Nonce(), Header: hdr})
}

// Code reads one code by value, requiring 200.
func (sg *Signer) Code(projectID, value string) contract.Code {
	sg.t.Helper()
	var c contract.Code
	sg.Get(ByCodePath(projectID, value), "").Decode(sg.t, http.StatusOK, &c)
	return c
}

// Page reads one page of the project's code list with the raw query, requiring 200.
func (sg *Signer) Page(projectID, query string) contract.CodePage {
	sg.t.Helper()
	var p contract.CodePage
	sg.Get(ProjectPath(projectID)+"/codes", query).Decode(sg.t, http.StatusOK, &p)
	return p
}

// ProjectPath is the path of a project, the prefix of its codes' paths.
func ProjectPath(projectID string) string { return "/api/v1/projects/" + projectID }

// VerifyPath is the path of a project's verify endpoint.
func VerifyPath(projectID string) string { return ProjectPath(projectID) + "/codes/verify" }

// ByCodePath is the path reading a code by value, encoded as url.PathEscape does.
func ByCodePath(projectID, value string) string {
	return ProjectPath(projectID) + "/codes/by-code/" + url.PathEscape(value)
}

// Decode unmarshals the body into v, failing the test on a status other than want.
func (r Response) Decode(t testing.TB, want int, v any) {
	t.Helper()
	if r.Status != want {
		t.Fatalf("status %d, want %d; body %s", r.Status, want, r.Body)
	}
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// Fields returns the top-level JSON members of the body, to tell null from absent.
func (r Response) Fields(t testing.TB) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %s", r.Body)
	}
	return m
}
