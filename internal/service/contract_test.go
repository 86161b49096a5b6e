package service_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/acv/acv/api/contract"
)

// This file holds the end-to-end tests of the wire contract (../../../shared/contract.md):
// every endpoint, outcome, error code and HTTP status, against a whole running stack. Requests
// are built and signed by hand here, from the contract's text, so the tests prove the bytes an
// original SDK sends are accepted, independently of the api and client packages.

// ctSigner sends hand-built, hand-signed requests with one API key.
type ctSigner struct {
	t      *testing.T
	base   string
	keyID  string
	secret string
	hc     *http.Client
}

func ctSignerFor(t *testing.T, s *stack, base string, k contract.APIKey) *ctSigner {
	return &ctSigner{t: t, base: base, keyID: k.ID, secret: k.Secret, hc: s.http}
}

// with returns the same signer reporting to another (sub)test.
func (sg *ctSigner) with(t *testing.T) *ctSigner {
	c := *sg
	c.t = t
	return &c
}

// ctReq is one request exactly as it goes on the wire.
type ctReq struct {
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

// ctResp is an answer.
type ctResp struct {
	Status int
	Header http.Header
	Body   []byte
}

// ctStringToSign composes the contract's string to sign: METHOD, PATH, QUERY, the lowercase
// hex SHA-256 of the body and the timestamp on five lines, and the nonce on a sixth when sent.
func ctStringToSign(method, path, query string, body []byte, ts, nonce string) string {
	sum := sha256.Sum256(body)
	lines := []string{method, path, query, hex.EncodeToString(sum[:]), ts}
	if nonce != "" {
		lines = append(lines, nonce)
	}
	return strings.Join(lines, "\n")
}

// ctSign is the lowercase hex HMAC-SHA256 of s keyed with the secret's hex text.
func ctSign(secret, s string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(s))
	return hex.EncodeToString(m.Sum(nil))
}

// ctSortQuery sorts the key=value pairs of a raw query by key, keeping their encoding and, for
// a repeated key, the order they were sent in.
func ctSortQuery(raw string) string {
	if raw == "" {
		return ""
	}
	pairs := strings.Split(raw, "&")
	key := func(p string) string { k, _, _ := strings.Cut(p, "="); return k }
	sort.SliceStable(pairs, func(i, j int) bool { return key(pairs[i]) < key(pairs[j]) })
	return strings.Join(pairs, "&")
}

// ctNonce is a fresh X-Nonce.
func ctNonce() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

// build prepares the request; sending the same ctReq twice sends the same bytes twice.
func (sg *ctSigner) build(r ctReq) *http.Request {
	sg.t.Helper()
	ts := r.TS
	if ts == 0 {
		ts = time.Now().Unix()
	}
	tss := strconv.FormatInt(ts, 10)
	q := ctSortQuery(r.Query)
	if r.SignQuery != nil {
		q = *r.SignQuery
	}
	sig := ctSign(sg.secret, ctStringToSign(r.Method, r.Path, q, r.Body, tss, r.Nonce))
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
	req, err := http.NewRequest(r.Method, sg.base+"/", body)
	if err != nil {
		sg.t.Fatal(err)
	}
	// An Opaque URL is written to the request line verbatim: Go re-encodes nothing.
	req.URL.Opaque = r.Path
	req.URL.RawQuery = r.Query
	if len(r.Body) > 0 {
		req.Header.Set("Content-Type", "application/json")
	}
	h := map[string]string{"X-API-Key": sg.keyID, "X-Timestamp": tss, "X-Signature": sig}
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

// send sends one request and reads the whole answer.
func (sg *ctSigner) send(r ctReq) ctResp {
	sg.t.Helper()
	return ctDo(sg.t, sg.hc, sg.build(r))
}

func ctDo(t *testing.T, hc *http.Client, req *http.Request) ctResp {
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
	return ctResp{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// get sends a signed GET with a fresh nonce.
func (sg *ctSigner) get(path, query string) ctResp {
	sg.t.Helper()
	return sg.send(ctReq{Method: http.MethodGet, Path: path, Query: query, Nonce: ctNonce()})
}

// post sends a signed POST of body (marshalled to JSON) with a fresh nonce.
func (sg *ctSigner) post(path string, body any, hdr http.Header) ctResp {
	sg.t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		sg.t.Fatal(err)
	}
	return sg.send(ctReq{Method: http.MethodPost, Path: path, Body: b, Nonce: ctNonce(), Header: hdr})
}

func ctProject(projectID string) string { return "/api/v1/projects/" + projectID }

func ctVerifyPath(projectID string) string { return ctProject(projectID) + "/codes/verify" }

func ctReactivatePath(projectID string) string { return ctProject(projectID) + "/codes/reactivate" }

func ctByCodePath(projectID, value string) string {
	return ctProject(projectID) + "/codes/by-code/" + url.PathEscape(value)
}

// decode unmarshals the body into v, failing the test on a status other than want.
func (r ctResp) decode(t *testing.T, want int, v any) {
	t.Helper()
	if r.Status != want {
		t.Fatalf("status %d, want %d; body %s", r.Status, want, r.Body)
	}
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// fields returns the top-level JSON members of the body, to tell null from absent.
func (r ctResp) fields(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %s", r.Body)
	}
	return m
}

// ctWantDetail checks an error answer: the status, a JSON body that is exactly
// {"detail": "<English sentence>"}, and, when mention is set, that the sentence names it.
func ctWantDetail(t *testing.T, r ctResp, status int, mention string) string {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d; body %s", r.Status, status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	m := r.fields(t)
	if len(m) != 1 {
		t.Errorf("error body has members other than detail: %s", r.Body)
	}
	var detail string
	if err := json.Unmarshal(m["detail"], &detail); err != nil {
		t.Fatalf("detail is not a string: %s", r.Body)
	}
	ctWantSentence(t, detail)
	if mention != "" && !strings.Contains(strings.ToLower(detail), strings.ToLower(mention)) {
		t.Errorf("detail %q does not mention %q", detail, mention)
	}
	return detail
}

// ctWantSentence checks that a detail reads as an English sentence for a person, not as an
// internal error: several words, printable, no Go or driver error text.
func ctWantSentence(t *testing.T, s string) {
	t.Helper()
	if len(strings.Fields(s)) < 2 {
		t.Errorf("detail %q is not a sentence", s)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			t.Errorf("detail %q holds a non-printable character %U", s, r)
		}
	}
	for _, leak := range []string{"json:", "strconv", "*string", "pgx", "redis", "sql", "unexpected EOF", "%!", "panic"} {
		if strings.Contains(strings.ToLower(s), strings.ToLower(leak)) {
			t.Errorf("detail %q leaks internals (%q)", s, leak)
		}
	}
}

// ctCodeID is the id of a code value in a project, read from Postgres.
func ctCodeID(t *testing.T, s *stack, projectID, value string) string {
	t.Helper()
	row, err := s.deps.Store.CodeByValue(context.Background(), projectID, value)
	if err != nil {
		t.Fatalf("code %q: %v", value, err)
	}
	return row.ID
}

// ctWaitLogs waits until the pipeline delivered n logs of a code and fails when it holds more.
// Events of one code share a Kafka partition, so when the n-th arrived every earlier one did.
func ctWaitLogs(t *testing.T, s *stack, codeID string, n int) {
	t.Helper()
	waitFor(t, 30*time.Second, "verification logs in postgres", func() (bool, string) {
		got := s.logCount(codeID)
		return got >= n, fmt.Sprintf("%d of %d logs", got, n)
	})
	if got := s.logCount(codeID); got != n {
		t.Fatalf("code %s has %d verification logs, want %d", codeID, got, n)
	}
}

// ctInWindow checks that a Unix-seconds timestamp lies within [from, to].
func ctInWindow(t *testing.T, what string, v *int64, from, to time.Time) {
	t.Helper()
	if v == nil {
		t.Fatalf("%s is null", what)
	}
	if *v < from.Unix() || *v > to.Unix() {
		t.Fatalf("%s = %d, want Unix seconds in [%d, %d]", what, *v, from.Unix(), to.Unix())
	}
}

// ctCode reads one code by value with the signer, requiring 200.
func ctCode(t *testing.T, sg *ctSigner, projectID, value string) contract.Code {
	t.Helper()
	var c contract.Code
	sg.with(t).get(ctByCodePath(projectID, value), "").decode(t, http.StatusOK, &c)
	return c
}

// ctPage reads one page of the list with the raw query.
func ctPage(t *testing.T, sg *ctSigner, projectID, query string) contract.CodePage {
	t.Helper()
	var p contract.CodePage
	sg.with(t).get(ctProject(projectID)+"/codes", query).decode(t, http.StatusOK, &p)
	return p
}

func ctValues(items []contract.Code) []string {
	out := make([]string, len(items))
	for i, c := range items {
		out[i] = c.Code
	}
	slices.Sort(out)
	return out
}

func ctSorted(v ...string) []string {
	v = slices.Clone(v)
	slices.Sort(v)
	return v
}

func ctPtr[T any](v T) *T { return &v }

// ctOutcome is a verify or reactivate answer with its JSON members.
type ctOutcome struct {
	Success       bool    `json:"success"`
	CodeID        *string `json:"code_id"`
	Code          string  `json:"code"`
	VerifiedAt    *int64  `json:"verified_at"`
	ReactivatedAt *int64  `json:"reactivated_at"`
	Message       string  `json:"message"`
	ErrorCode     *string `json:"error_code"`
}

func TestContract(t *testing.T) {
	s := newStack(t)
	base := s.startAPI()
	s.startRelay("relay", hooksNone)
	s.startConsumer(hooksNone)
	ctx := context.Background()
	start := time.Now()
	past := start.Add(-time.Hour).Unix()
	future := start.Add(time.Hour).Unix()

	mustOK := func(sg *ctSigner, path string, body any) ctOutcome {
		t.Helper()
		var o ctOutcome
		sg.post(path, body, nil).decode(t, http.StatusOK, &o)
		if !o.Success {
			t.Fatalf("setup %s %v: %+v", path, body, o)
		}
		return o
	}
	// Tenant A: every outcome of verify and reactivate. Tenant S: statistics and the status
	// filter.
	a := s.newTenant(nil)
	sa := ctSignerFor(t, s, base, a.Key)
	st := s.newTenant(nil)
	ss := ctSignerFor(t, s, base, st.Key)

	// Codes that expire a few seconds from now are verified at once and checked at the end,
	// after their expiry passed, so the rest of the test runs while they age.
	soon := time.Now().Unix() + 3
	s.importCodes(a.ProjectID, &soon, "SOON-1")
	s.importCodes(st.ProjectID, &soon, "S-SOON", "S-SOONU")
	mustOK(sa, ctVerifyPath(a.ProjectID), map[string]any{"code": "SOON-1"})
	mustOK(ss, ctVerifyPath(st.ProjectID), map[string]any{"code": "S-SOON"})
	if time.Now().Unix() >= soon {
		t.Fatalf("setup took too long: the codes expiring at %d expired before being verified", soon)
	}

	s.importCodes(a.ProjectID, nil, "OK-1", "USED-1", "UNUSED-1", "DIS-1", "DISUSED-1", "REACT-1")
	s.importCodes(a.ProjectID, &past, "EXP-1", "EXPUNUSED")
	s.importCodes(st.ProjectID, nil, "S-U1", "S-U2", "S-U3", "S-V1", "S-V2", "S-R1", "S-D1", "S-DV")
	s.importCodes(st.ProjectID, &future, "S-F1")
	s.importCodes(st.ProjectID, &past, "S-E1", "S-E2", "S-EF")
	for _, v := range []string{"USED-1", "DISUSED-1", "REACT-1"} {
		mustOK(sa, ctVerifyPath(a.ProjectID), map[string]any{"code": v})
	}
	for _, v := range []string{"S-V1", "S-V2", "S-R1", "S-DV"} {
		mustOK(ss, ctVerifyPath(st.ProjectID), map[string]any{"code": v})
	}
	mustOK(ss, ctReactivatePath(st.ProjectID), map[string]any{"code": "S-R1"})
	var o ctOutcome
	ss.post(ctVerifyPath(st.ProjectID), map[string]any{"code": "S-EF"}, nil).decode(t, http.StatusOK, &o)
	for _, d := range []struct{ p, v string }{{a.ProjectID, "DIS-1"}, {a.ProjectID, "DISUSED-1"}, {st.ProjectID, "S-D1"}, {st.ProjectID, "S-DV"}} {
		if err := s.admin.SetCodeDisabled(ctx, d.p, d.v, true); err != nil {
			t.Fatal(err)
		}
	}

	// Tenant PD: a disabled project. Tenant PE: an expired one.
	pd := s.newTenant(nil)
	spd := ctSignerFor(t, s, base, pd.Key)
	s.importCodes(pd.ProjectID, nil, "PD-1", "PD-DIS")
	if err := s.admin.SetCodeDisabled(ctx, pd.ProjectID, "PD-DIS", true); err != nil {
		t.Fatal(err)
	}
	if err := s.admin.SetProjectEnabled(ctx, pd.ProjectID, false); err != nil {
		t.Fatal(err)
	}
	pe := s.newTenant(&past)
	spe := ctSignerFor(t, s, base, pe.Key)
	s.importCodes(pe.ProjectID, nil, "PE-1", "PE-2")
	s.importCodes(pe.ProjectID, &future, "PE-OWN")

	t.Run("Outcomes", func(t *testing.T) {
		type row struct {
			name   string
			sg     *ctSigner
			proj   string
			action contract.Action
			body   map[string]any
			hdr    http.Header
			want   contract.ErrorCode // "" = success
		}
		verify, react := contract.ActionVerify, contract.ActionReactivate
		rows := []row{
			{"verify success", sa, a.ProjectID, verify, map[string]any{"code": "OK-1", "verified_by": "till-7"},
				http.Header{"X-Forwarded-For": {"203.0.113.9"}, "X-Real-Ip": {"203.0.113.9"}}, ""},
			{"verify used", sa, a.ProjectID, verify, map[string]any{"code": "USED-1"}, nil, contract.CodeAlreadyUsed},
			{"reactivate unused", sa, a.ProjectID, react, map[string]any{"code": "UNUSED-1"}, nil, contract.CodeAlreadyUnused},
			{"verify disabled", sa, a.ProjectID, verify, map[string]any{"code": "DIS-1"}, nil, contract.CodeDisabled},
			{"reactivate disabled", sa, a.ProjectID, react, map[string]any{"code": "DIS-1"}, nil, contract.CodeDisabled},
			{"verify disabled before used", sa, a.ProjectID, verify, map[string]any{"code": "DISUSED-1"}, nil, contract.CodeDisabled},
			{"reactivate disabled used code", sa, a.ProjectID, react, map[string]any{"code": "DISUSED-1"}, nil, contract.CodeDisabled},
			{"verify expired", sa, a.ProjectID, verify, map[string]any{"code": "EXP-1"}, nil, contract.CodeExpired},
			{"reactivate unused before expired", sa, a.ProjectID, react, map[string]any{"code": "EXPUNUSED"}, nil, contract.CodeAlreadyUnused},
			{"reactivate success", sa, a.ProjectID, react, map[string]any{"code": "REACT-1", "reactivated_by": "ops", "reason": "refund"}, nil, ""},
			{"verify unknown", sa, a.ProjectID, verify, map[string]any{"code": "NOPE"}, nil, contract.CodeNotFound},
			{"reactivate unknown", sa, a.ProjectID, react, map[string]any{"code": "NOPE"}, nil, contract.CodeNotFound},
			{"verify in disabled project", spd, pd.ProjectID, verify, map[string]any{"code": "PD-1"}, nil, contract.ProjectDisabled},
			{"reactivate in disabled project", spd, pd.ProjectID, react, map[string]any{"code": "PD-1"}, nil, contract.ProjectDisabled},
			{"project disabled before code disabled", spd, pd.ProjectID, verify, map[string]any{"code": "PD-DIS"}, nil, contract.ProjectDisabled},
			{"unknown before project disabled", spd, pd.ProjectID, verify, map[string]any{"code": "PD-NOPE"}, nil, contract.CodeNotFound},
			{"verify in expired project", spe, pe.ProjectID, verify, map[string]any{"code": "PE-1"}, nil, contract.ProjectExpired},
			{"reactivate in expired project", spe, pe.ProjectID, react, map[string]any{"code": "PE-1"}, nil, contract.ProjectExpired},
			{"project expiry before own expiry", spe, pe.ProjectID, verify, map[string]any{"code": "PE-OWN"}, nil, contract.ProjectExpired},
		}
		for _, r := range rows {
			t.Run(r.name, func(t *testing.T) {
				path := ctVerifyPath(r.proj)
				if r.action == react {
					path = ctReactivatePath(r.proj)
				}
				before := time.Now()
				resp := r.sg.with(t).post(path, r.body, r.hdr)
				after := time.Now()
				ctCheckOutcome(t, s, resp, r.proj, r.action, r.body["code"].(string), r.want, before, after)
			})
		}
		t.Run("state follows at once", func(t *testing.T) {
			c := ctCode(t, sa, a.ProjectID, "OK-1")
			if !c.Status || c.VerifiedBy == nil || *c.VerifiedBy != "till-7" || c.VerifiedAt == nil {
				t.Fatalf("OK-1 after verify: %+v", c)
			}
			c = ctCode(t, sa, a.ProjectID, "REACT-1")
			if c.Status || c.VerifiedAt != nil || c.VerifiedBy != nil {
				t.Fatalf("REACT-1 after reactivate: %+v", c)
			}
			c = ctCode(t, sa, a.ProjectID, "DISUSED-1")
			if c.Status || !c.IsDisabled || c.IsExpired {
				t.Fatalf("a disabled, once verified code shows %+v; want status false, is_disabled true", c)
			}
			c = ctCode(t, sa, a.ProjectID, "EXP-1")
			if c.Status || !c.IsExpired || c.ExpiresAt == nil || *c.ExpiresAt != past {
				t.Fatalf("an expired code shows %+v", c)
			}
		})
	})

	t.Run("VerificationLogs", func(t *testing.T) {
		type wantLog struct {
			result, action string
			by, reason     *string
		}
		verifyOK := wantLog{contract.ResultSuccess, "verify", nil, nil}
		failed := func(action string, code contract.ErrorCode) wantLog {
			return wantLog{contract.ResultFailed, action, nil, ctPtr(string(code))}
		}
		cases := []struct {
			sg    *ctSigner
			proj  string
			value string
			logs  []wantLog // newest first
		}{
			{sa, a.ProjectID, "OK-1", []wantLog{{contract.ResultSuccess, "verify", ctPtr("till-7"), nil}}},
			{sa, a.ProjectID, "USED-1", []wantLog{failed("verify", contract.CodeAlreadyUsed), verifyOK}},
			{sa, a.ProjectID, "REACT-1", []wantLog{{contract.ResultReactivated, "reactivate", ctPtr("ops"), ctPtr("refund")}, verifyOK}},
			{sa, a.ProjectID, "DIS-1", []wantLog{failed("reactivate", contract.CodeDisabled), failed("verify", contract.CodeDisabled)}},
			{sa, a.ProjectID, "UNUSED-1", []wantLog{failed("reactivate", contract.CodeAlreadyUnused)}},
			{sa, a.ProjectID, "EXP-1", []wantLog{failed("verify", contract.CodeExpired)}},
			{spd, pd.ProjectID, "PD-1", []wantLog{failed("reactivate", contract.ProjectDisabled), failed("verify", contract.ProjectDisabled)}},
			{spe, pe.ProjectID, "PE-1", []wantLog{failed("reactivate", contract.ProjectExpired), failed("verify", contract.ProjectExpired)}},
		}
		for _, c := range cases {
			t.Run(c.value, func(t *testing.T) {
				id := ctCodeID(t, s, c.proj, c.value)
				ctWaitLogs(t, s, id, len(c.logs))
				var shown [][]contract.LogEntry
				if c.proj == pd.ProjectID {
					// A disabled project's codes cannot be read through the API (401).
					logs, err := s.deps.Store.Logs(context.Background(), id, 0)
					if err != nil {
						t.Fatal(err)
					}
					shown = append(shown, logs)
				} else {
					var byID contract.Code
					c.sg.with(t).get(ctProject(c.proj)+"/codes/"+id, "").decode(t, http.StatusOK, &byID)
					shown = append(shown, ctCode(t, c.sg, c.proj, c.value).VerificationLogs, byID.VerificationLogs)
				}
				for _, got := range shown {
					if len(got) != len(c.logs) {
						t.Fatalf("%d logs shown, want %d: %+v", len(got), len(c.logs), got)
					}
					for i, w := range c.logs {
						g := got[i]
						if !contract.ValidID(g.ID) || g.Result != w.result || g.Action != w.action || g.IPAddress != "127.0.0.1" ||
							!ctEqualPtr(g.VerifiedBy, w.by) || !ctEqualPtr(g.Reason, w.reason) ||
							g.VerifiedAt < start.Unix() || g.VerifiedAt > time.Now().Unix() {
							t.Errorf("log %d: %+v (by %v, reason %v), want %+v (by %v, reason %v), ip 127.0.0.1, Unix seconds since %d",
								i, g, ctDeref(g.VerifiedBy), ctDeref(g.Reason), w, ctDeref(w.by), ctDeref(w.reason), start.Unix())
						}
					}
				}
			})
		}
	})

	t.Run("ProjectAndStatistics", func(t *testing.T) {
		var p contract.Project
		resp := ss.with(t).get(ctProject(st.ProjectID), "")
		resp.decode(t, http.StatusOK, &p)
		if p.ID != st.ProjectID || p.Name != "test" || !p.Status || p.ExpiresAt != nil ||
			p.CreatedAt < start.Unix()-1 || p.CreatedAt > time.Now().Unix() || p.Statistics == nil {
			t.Fatalf("project %s", resp.Body)
		}
		// The expired project stays readable, and counts its codes without an own expiry as expired.
		ctWaitStats(t, spe, pe.ProjectID, contract.Statistics{TotalCodes: 3, UnusedCodes: 1, ExpiredCodes: 2})
		var pp contract.Project
		spe.with(t).get(ctProject(pe.ProjectID), "").decode(t, http.StatusOK, &pp)
		if !pp.Status || pp.ExpiresAt == nil || *pp.ExpiresAt != past {
			t.Fatalf("expired project: %+v; want status true (enabled), expires_at %d", pp, past)
		}
		if got := ctValues(ctPage(t, spe, pe.ProjectID, "status=expired").Items); !slices.Equal(got, ctSorted("PE-1", "PE-2")) {
			t.Fatalf("expired project, status=expired: %v", got)
		}
	})

	t.Run("List", func(t *testing.T) { ctTestList(t, s, base) })
	t.Run("SingleCodeReads", func(t *testing.T) { ctTestSingleReads(t, s, base) })
	t.Run("Authentication", func(t *testing.T) { ctTestAuth(t, s, base, spd, pd) })
	t.Run("SignatureFormats", func(t *testing.T) { ctTestSignatureFormats(t, s, base) })
	t.Run("RateLimit", func(t *testing.T) { ctTestRateLimit(t, s, base) })
	t.Run("Idempotency", func(t *testing.T) { ctTestIdempotency(t, s, base) })

	// From here on the codes expiring at `soon` have expired.
	if d := time.Until(time.Unix(soon, 0)); d > 0 {
		time.Sleep(d)
	}

	t.Run("ExpiredAfterUse", func(t *testing.T) {
		before := time.Now()
		resp := sa.with(t).post(ctVerifyPath(a.ProjectID), map[string]any{"code": "SOON-1"}, nil)
		ctCheckOutcome(t, s, resp, a.ProjectID, contract.ActionVerify, "SOON-1", contract.CodeAlreadyUsed, before, time.Now())
		resp = sa.with(t).post(ctReactivatePath(a.ProjectID), map[string]any{"code": "SOON-1"}, nil)
		ctCheckOutcome(t, s, resp, a.ProjectID, contract.ActionReactivate, "SOON-1", contract.CodeExpired, before, time.Now())
		resp = ss.with(t).post(ctVerifyPath(st.ProjectID), map[string]any{"code": "S-SOONU"}, nil)
		ctCheckOutcome(t, s, resp, st.ProjectID, contract.ActionVerify, "S-SOONU", contract.CodeExpired, before, time.Now())
		c := ctCode(t, sa, a.ProjectID, "SOON-1")
		if !c.Status || c.IsExpired {
			t.Fatalf("a used code past its expiry shows %+v; want status true, is_expired false", c)
		}
	})

	t.Run("StatisticsExact", func(t *testing.T) {
		want := contract.Statistics{TotalCodes: 14, UsedCodes: 3, UnusedCodes: 5, DisabledCodes: 2, ExpiredCodes: 4}
		ctWaitStats(t, ss, st.ProjectID, want)
		for _, f := range []struct {
			status string
			want   []string
		}{
			{"used", ctSorted("S-V1", "S-V2", "S-SOON")},
			{"unused", ctSorted("S-U1", "S-U2", "S-U3", "S-F1", "S-R1")},
			{"disabled", ctSorted("S-D1", "S-DV")},
			{"expired", ctSorted("S-E1", "S-E2", "S-EF", "S-SOONU")},
		} {
			p := ctPage(t, ss, st.ProjectID, "status="+f.status)
			if got := ctValues(p.Items); !slices.Equal(got, f.want) || p.Total != int64(len(f.want)) || p.TotalPages != 1 {
				t.Errorf("status=%s: %v (total %d, pages %d), want %v", f.status, got, p.Total, p.TotalPages, f.want)
			}
			for _, c := range p.Items {
				if c.Status != (f.status == "used") || c.IsExpired != (f.status == "expired") || c.IsDisabled != (f.status == "disabled") {
					t.Errorf("status=%s lists %+v with fields of another state", f.status, c)
				}
			}
		}
	})

	t.Run("EveryAttemptOnAnExistingCodeIsLogged", func(t *testing.T) {
		// Tenant A saw 4 setup verifies, 10 answered attempts on its codes in Outcomes, 2 in
		// ExpiredAfterUse, and 2 attempts on an unknown code, which leave no log.
		waitFor(t, 30*time.Second, "tenant A's logs", func() (bool, string) {
			n := ctProjectLogs(t, s, a.ProjectID)
			return n >= 16, fmt.Sprintf("%d of 16 logs", n)
		})
		waitFor(t, 10*time.Second, "outbox drained", s.outboxEmpty)
		if n := ctProjectLogs(t, s, a.ProjectID); n != 16 {
			t.Fatalf("tenant A has %d logs, want 16", n)
		}
	})
}

func ctProjectLogs(t *testing.T, s *stack, projectID string) int {
	t.Helper()
	var n int
	if err := s.deps.Store.Pool().QueryRow(context.Background(),
		"SELECT count(*) FROM verification_logs WHERE project_id = $1", projectID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func ctEqualPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func ctDeref(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}

// ctWaitStats waits until the project's statistics are want: they may trail the pipeline.
func ctWaitStats(t *testing.T, sg *ctSigner, projectID string, want contract.Statistics) {
	t.Helper()
	waitFor(t, 30*time.Second, "statistics", func() (bool, string) {
		var p contract.Project
		sg.with(t).get(ctProject(projectID), "").decode(t, http.StatusOK, &p)
		if p.Statistics == nil {
			return false, "no statistics"
		}
		got := *p.Statistics
		if got.TotalCodes != got.UsedCodes+got.UnusedCodes+got.DisabledCodes+got.ExpiredCodes {
			t.Fatalf("total_codes is not the sum of the four states: %+v", got)
		}
		return got == want, fmt.Sprintf("%+v, want %+v", got, want)
	})
}

// ctCheckOutcome checks a verify or reactivate answer: HTTP 200 whatever the outcome, every
// member present, code_id null exactly when the code was not found, Unix-seconds times.
func ctCheckOutcome(t *testing.T, s *stack, resp ctResp, projectID string, action contract.Action, value string, want contract.ErrorCode, before, after time.Time) {
	t.Helper()
	var o ctOutcome
	resp.decode(t, http.StatusOK, &o)
	m := resp.fields(t)
	timeField := "verified_at"
	if action == contract.ActionReactivate {
		timeField = "reactivated_at"
	}
	for _, f := range []string{"success", "code_id", "code", timeField, "message", "error_code"} {
		if _, ok := m[f]; !ok {
			t.Errorf("member %q missing from %s", f, resp.Body)
		}
	}
	if o.Code != value || o.Success != (want == "") || o.Message == "" {
		t.Errorf("answer %s for %q, want success=%v", resp.Body, value, want == "")
	}
	if want == "" {
		if string(m["error_code"]) != "null" {
			t.Errorf("error_code %s on success, want null", m["error_code"])
		}
	} else if o.ErrorCode == nil || *o.ErrorCode != string(want) {
		t.Errorf("error_code %s, want %s", m["error_code"], want)
	}
	if want == contract.CodeNotFound {
		if string(m["code_id"]) != "null" {
			t.Errorf("code_id %s for an unknown code, want null", m["code_id"])
		}
	} else if id := ctCodeID(t, s, projectID, value); o.CodeID == nil || *o.CodeID != id {
		t.Errorf("code_id %s, want %q", m["code_id"], id)
	}
	wantMsg := map[contract.ErrorCode]string{
		contract.CodeNotFound: "Code not found", contract.CodeAlreadyUsed: "Code has already been used",
	}[want]
	switch {
	case want == "" && action == contract.ActionVerify:
		wantMsg = "Code verified successfully"
		ctInWindow(t, "verified_at", o.VerifiedAt, before, after)
	case want == "":
		wantMsg = "Code reactivated successfully"
		ctInWindow(t, "reactivated_at", o.ReactivatedAt, before, after)
	case action == contract.ActionReactivate && string(m["reactivated_at"]) != "null":
		t.Errorf("reactivated_at %s on a failed reactivate, want null", m["reactivated_at"])
	}
	if wantMsg != "" && o.Message != wantMsg {
		t.Errorf("message %q, want %q", o.Message, wantMsg)
	}
	ctWantSentence(t, o.Message)
}

func ctTestList(t *testing.T, s *stack, base string) {
	tn := s.newTenant(nil)
	sg := ctSignerFor(t, s, base, tn.Key)
	var plain []string
	for i := 0; i < 25; i++ {
		plain = append(plain, fmt.Sprintf("L-%03d", i))
	}
	s.importCodes(tn.ProjectID, nil, plain...)
	s.importCodes(tn.ProjectID, nil, "Promo-ABC", "pRoMo-xyz", "50%OFF", "50XOFF", "A_B", "AXB", `C\D`)
	const total = 32

	t.Run("default paging", func(t *testing.T) {
		resp := sg.with(t).get(ctProject(tn.ProjectID)+"/codes", "")
		var p contract.CodePage
		resp.decode(t, http.StatusOK, &p)
		if len(p.Items) != 20 || p.Total != total || p.Page != 1 || p.PageSize != 20 || p.TotalPages != 2 {
			t.Fatalf("default page: %d items, total %d, page %d, page_size %d, total_pages %d",
				len(p.Items), p.Total, p.Page, p.PageSize, p.TotalPages)
		}
		var raw struct{ Items []map[string]json.RawMessage }
		resp.decode(t, http.StatusOK, &raw)
		if _, ok := raw.Items[0]["verification_logs"]; ok {
			t.Errorf("list items carry verification_logs: %s", resp.Body)
		}
	})
	t.Run("pages in order", func(t *testing.T) {
		var ids []string
		for page := 1; page <= 5; page++ {
			p := ctPage(t, sg, tn.ProjectID, fmt.Sprintf("page=%d&page_size=7", page))
			wantLen := 7
			if page == 5 {
				wantLen = total - 28
			}
			if len(p.Items) != wantLen || p.Total != total || p.TotalPages != 5 || p.Page != page || p.PageSize != 7 {
				t.Fatalf("page %d of 7: %d items, total %d, pages %d", page, len(p.Items), p.Total, p.TotalPages)
			}
			for _, c := range p.Items {
				ids = append(ids, c.ID)
			}
		}
		// Newest first: created_at, then id, descending. Ids are time-ordered, so the whole
		// list is the ids in descending order, each once.
		want := slices.Clone(ids)
		slices.Sort(want)
		slices.Reverse(want)
		want = slices.Compact(want)
		if !slices.Equal(ids, want) || len(ids) != total {
			t.Fatalf("pages are not newest first without repeats: %v", ids)
		}
	})
	t.Run("past the end", func(t *testing.T) {
		for _, q := range []string{"page=3", "page=6&page_size=7", "page=1000&page_size=100"} {
			resp := sg.with(t).get(ctProject(tn.ProjectID)+"/codes", q)
			var p contract.CodePage
			resp.decode(t, http.StatusOK, &p)
			wantPages := int64(2)
			if strings.Contains(q, "page_size=7") {
				wantPages = 5
			} else if strings.Contains(q, "page_size=100") {
				wantPages = 1
			}
			if len(p.Items) != 0 || p.Total != total || p.TotalPages != wantPages || !bytes.Contains(resp.Body, []byte(`"items":[]`)) {
				t.Errorf("%s: %s; want empty items, total %d, total_pages %d", q, resp.Body, total, wantPages)
			}
		}
	})
	t.Run("search", func(t *testing.T) {
		for _, c := range []struct {
			search string
			want   []string
			extra  string
		}{
			{"promo", ctSorted("Promo-ABC", "pRoMo-xyz"), ""},
			{"PROMO-abc", ctSorted("Promo-ABC"), ""},
			{"%", ctSorted("50%OFF"), ""},
			{"0%o", ctSorted("50%OFF"), ""},
			{"_", ctSorted("A_B"), ""},
			{"a_b", ctSorted("A_B"), ""},
			{`\`, ctSorted(`C\D`), ""},
			{"l-01", ctSorted("L-010", "L-011", "L-012", "L-013", "L-014", "L-015", "L-016", "L-017", "L-018", "L-019"), ""},
			{"promo", ctSorted("Promo-ABC", "pRoMo-xyz"), "&status=unused"},
			{"promo", nil, "&status=used"},
			{"zzz", nil, ""},
		} {
			q := "search=" + url.QueryEscape(c.search) + c.extra
			resp := sg.with(t).get(ctProject(tn.ProjectID)+"/codes", q)
			var p contract.CodePage
			resp.decode(t, http.StatusOK, &p)
			got := ctValues(p.Items)
			wantPages := int64(0)
			if len(c.want) > 0 {
				wantPages = 1
			}
			if !slices.Equal(got, c.want) && !(len(got) == 0 && len(c.want) == 0) ||
				p.Total != int64(len(c.want)) || p.TotalPages != wantPages {
				t.Errorf("%s: %v (total %d, total_pages %d), want %v", q, got, p.Total, p.TotalPages, c.want)
			}
			if len(c.want) == 0 && !bytes.Contains(resp.Body, []byte(`"items":[]`)) {
				t.Errorf("%s: items is not an empty array: %s", q, resp.Body)
			}
		}
		p := ctPage(t, sg, tn.ProjectID, "search=l-0&page_size=10&page=3")
		if p.Total != 25 || p.TotalPages != 3 || len(p.Items) != 5 {
			t.Errorf("search l-0, page 3 of 10: %d items, total %d, pages %d; want 5, 25, 3", len(p.Items), p.Total, p.TotalPages)
		}
	})
}

func ctTestSingleReads(t *testing.T, s *stack, base string) {
	tn := s.newTenant(nil)
	other := s.newTenant(nil)
	sg := ctSignerFor(t, s, base, tn.Key)
	values := []string{"A/B C", "50%off", "Ünï码-✓", "what?x=1&y", "A/B+C", "a+b", "hash#tag", "semi;colon", `back\slash`, "SHARED"}
	s.importCodes(tn.ProjectID, nil, values...)
	s.importCodes(other.ProjectID, nil, "SHARED", "ONLY-OTHER")
	otherID := ctCodeID(t, s, other.ProjectID, "SHARED")

	for _, v := range values {
		t.Run("by-code "+v, func(t *testing.T) {
			id := ctCodeID(t, s, tn.ProjectID, v)
			// Encoded as url.PathEscape does, and with every byte percent-encoded.
			var all strings.Builder
			for _, b := range []byte(v) {
				fmt.Fprintf(&all, "%%%02X", b)
			}
			for _, enc := range []string{url.PathEscape(v), all.String()} {
				resp := sg.with(t).get(ctProject(tn.ProjectID)+"/codes/by-code/"+enc, "")
				var c contract.Code
				resp.decode(t, http.StatusOK, &c)
				if c.ID != id || c.Code != v || c.Status || c.IsDisabled || c.IsExpired || c.VerifiedAt != nil {
					t.Fatalf("by-code/%s: %s; want code %q id %s, unused", enc, resp.Body, v, id)
				}
				if !bytes.Contains(resp.Body, []byte(`"verification_logs":[]`)) {
					t.Fatalf("by-code/%s: verification_logs is not an empty array: %s", enc, resp.Body)
				}
			}
			var c contract.Code
			sg.with(t).get(ctProject(tn.ProjectID)+"/codes/"+id, "").decode(t, http.StatusOK, &c)
			if c.ID != id || c.Code != v {
				t.Fatalf("by id %s: %+v", id, c)
			}
		})
	}
	t.Run("not found", func(t *testing.T) {
		for _, c := range []struct{ name, path string }{
			{"unknown id", ctProject(tn.ProjectID) + "/codes/" + contract.NewID()},
			{"malformed id", ctProject(tn.ProjectID) + "/codes/xyz"},
			{"id of another project's code", ctProject(tn.ProjectID) + "/codes/" + otherID},
			{"unknown value", ctByCodePath(tn.ProjectID, "NO-SUCH")},
			{"value only another project holds", ctByCodePath(tn.ProjectID, "ONLY-OTHER")},
		} {
			t.Run(c.name, func(t *testing.T) { ctWantDetail(t, sg.with(t).get(c.path, ""), http.StatusNotFound, "") })
		}
		if got := ctCode(t, sg, tn.ProjectID, "SHARED"); got.ID == otherID {
			t.Fatalf("by-code SHARED answered the other project's code")
		}
	})
	t.Run("unknown route", func(t *testing.T) {
		for _, p := range []string{"/api/v1/nothing", "/nothing", "/api/v2/projects/" + tn.ProjectID, ctProject(tn.ProjectID) + "/codes/by-code/x/y"} {
			ctWantDetail(t, sg.with(t).get(p, ""), http.StatusNotFound, "")
		}
	})
}

func ctTestAuth(t *testing.T, s *stack, base string, spd *ctSigner, pd *tenant) {
	tn := s.newTenant(nil)
	sg := ctSignerFor(t, s, base, tn.Key)
	b := s.newTenant(nil)
	s.importCodes(tn.ProjectID, nil, "AU-1", "AU-2", "AU-3", "AU-4", "AU-R")
	s.importCodes(b.ProjectID, nil, "B-1")
	proj := ctProject(tn.ProjectID)
	verifyBody := []byte(`{"code":"AU-1"}`)

	t.Run("missing or malformed headers", func(t *testing.T) {
		for _, h := range []string{"X-API-Key", "X-Timestamp", "X-Signature"} {
			for _, r := range []ctReq{
				{Method: http.MethodGet, Path: proj, Nonce: ctNonce(), Omit: h},
				{Method: http.MethodPost, Path: ctVerifyPath(tn.ProjectID), Body: verifyBody, Nonce: ctNonce(), Omit: h},
			} {
				ctWantDetail(t, sg.with(t).send(r), http.StatusUnauthorized, h)
			}
		}
		for name, r := range map[string]ctReq{
			"non-numeric timestamp":  {Method: http.MethodGet, Path: proj, Header: http.Header{"X-Timestamp": {"yesterday"}}},
			"nonce of 15 characters": {Method: http.MethodGet, Path: proj, Nonce: strings.Repeat("n", 15)},
			"nonce of 65 characters": {Method: http.MethodGet, Path: proj, Nonce: strings.Repeat("n", 65)},
			"nonce with a dot":       {Method: http.MethodGet, Path: proj, Nonce: "abcdefghijklmnop.q"},
			"unknown key":            {Method: http.MethodGet, Path: proj, Header: http.Header{"X-Api-Key": {contract.NewID()}}},
			"malformed key":          {Method: http.MethodGet, Path: proj, Header: http.Header{"X-Api-Key": {"not-a-key"}}},
		} {
			t.Run(name, func(t *testing.T) { ctWantDetail(t, sg.with(t).send(r), http.StatusUnauthorized, "") })
		}
	})
	t.Run("nonce bounds accepted", func(t *testing.T) {
		for _, n := range []string{"Ab0_-" + ctNonce()[:11], ctNonce() + ctNonce()} {
			if r := sg.with(t).send(ctReq{Method: http.MethodGet, Path: proj, Nonce: n}); r.Status != http.StatusOK {
				t.Errorf("X-Nonce of %d characters: %d %s", len(n), r.Status, r.Body)
			}
		}
	})
	t.Run("bad signature", func(t *testing.T) {
		good := sg.build(ctReq{Method: http.MethodGet, Path: proj})
		sig := []byte(good.Header.Get("X-Signature"))
		sig[0] ^= 1
		for name, r := range map[string]ctReq{
			"flipped":                  {Method: http.MethodGet, Path: proj, Sig: string(sig)},
			"lower-case method signed": {Method: http.MethodGet, Path: proj, Sig: ctSign(sg.secret, ctStringToSign("get", proj, "", nil, strconv.FormatInt(time.Now().Unix(), 10), ""))},
			"other secret":             {Method: http.MethodGet, Path: proj, Sig: ctSign(strings.Repeat("0", 64), ctStringToSign("GET", proj, "", nil, strconv.FormatInt(time.Now().Unix(), 10), ""))},
			"nonce not signed":         {Method: http.MethodGet, Path: proj, Header: http.Header{"X-Nonce": {ctNonce()}}},
			"query not signed":         {Method: http.MethodGet, Path: proj + "/codes", Query: "page=2", SignQuery: ctPtr("")},
			"body of another code":     {Method: http.MethodPost, Path: ctVerifyPath(tn.ProjectID), Body: verifyBody, Sig: ctSign(sg.secret, ctStringToSign("POST", ctVerifyPath(tn.ProjectID), "", []byte(`{"code":"AU-2"}`), strconv.FormatInt(time.Now().Unix(), 10), ""))},
		} {
			t.Run(name, func(t *testing.T) { ctWantDetail(t, sg.with(t).send(r), http.StatusUnauthorized, "") })
		}
		if c := ctCode(t, sg, tn.ProjectID, "AU-1"); c.Status {
			t.Fatalf("a verify refused for its signature redeemed the code")
		}
	})
	t.Run("timestamp window", func(t *testing.T) {
		now := time.Now().Unix()
		for _, skew := range []int64{-301, 301, -3600} {
			r := sg.with(t).send(ctReq{Method: http.MethodGet, Path: proj, Nonce: ctNonce(), TS: now + skew})
			d := ctWantDetail(t, r, http.StatusUnauthorized, "server time")
			ok := false
			for _, f := range strings.FieldsFunc(d, func(r rune) bool { return r < '0' || r > '9' }) {
				if v, err := strconv.ParseInt(f, 10, 64); err == nil && v >= now-5 && v <= time.Now().Unix()+5 {
					ok = true
				}
			}
			if !ok {
				t.Errorf("skew %d s: detail %q does not name the server time (about %d)", skew, d, now)
			}
		}
		for _, skew := range []int64{-290, 290} {
			r := sg.with(t).send(ctReq{Method: http.MethodGet, Path: proj, Nonce: ctNonce(), TS: now + skew})
			if r.Status != http.StatusOK {
				t.Errorf("skew %d s: %d %s, want 200", skew, r.Status, r.Body)
			}
		}
	})
	t.Run("replayed POST", func(t *testing.T) {
		for name, nonce := range map[string]string{"with nonce": ctNonce(), "without nonce": ""} {
			t.Run(name, func(t *testing.T) {
				value := "AU-3"
				if nonce == "" {
					value = "AU-4"
				}
				r := ctReq{Method: http.MethodPost, Path: ctReactivatePath(tn.ProjectID), Body: []byte(`{"code":"` + value + `"}`),
					Nonce: nonce, TS: time.Now().Unix()}
				var o ctOutcome
				sg.with(t).send(r).decode(t, http.StatusOK, &o) // CODE_ALREADY_UNUSED, logged
				d := ctWantDetail(t, sg.with(t).send(r), http.StatusUnauthorized, "")
				if d != "Request replayed" {
					t.Errorf("detail %q, want \"Request replayed\"", d)
				}
				// The replay wrote nothing: a later attempt is the code's second log, not third.
				sg.with(t).post(ctVerifyPath(tn.ProjectID), map[string]any{"code": value}, nil).decode(t, http.StatusOK, &o)
				if !o.Success {
					t.Fatalf("verify after the replay: %+v", o)
				}
				ctWaitLogs(t, s, ctCodeID(t, s, tn.ProjectID, value), 2)
			})
		}
	})
	t.Run("GET replay", func(t *testing.T) {
		r := ctReq{Method: http.MethodGet, Path: proj, Nonce: ctNonce(), TS: time.Now().Unix()}
		if got := sg.with(t).send(r); got.Status != http.StatusOK {
			t.Fatalf("first GET: %d %s", got.Status, got.Body)
		}
		if d := ctWantDetail(t, sg.with(t).send(r), http.StatusUnauthorized, ""); d != "Request replayed" {
			t.Errorf("detail %q, want \"Request replayed\"", d)
		}
		// The replay key is the nonce: the same nonce on another path is a replay too.
		r.Path = proj + "/codes"
		ctWantDetail(t, sg.with(t).send(r), http.StatusUnauthorized, "replayed")
		// Without a nonce, old SDKs may send the same GET twice within a second.
		r = ctReq{Method: http.MethodGet, Path: proj, TS: time.Now().Unix()}
		for i := 0; i < 2; i++ {
			if got := sg.with(t).send(r); got.Status != http.StatusOK {
				t.Fatalf("identical GET without nonce #%d: %d %s", i+1, got.Status, got.Body)
			}
		}
	})
	t.Run("another project", func(t *testing.T) {
		for _, r := range []ctReq{
			{Method: http.MethodGet, Path: ctProject(b.ProjectID), Nonce: ctNonce()},
			{Method: http.MethodGet, Path: ctByCodePath(b.ProjectID, "B-1"), Nonce: ctNonce()},
			{Method: http.MethodPost, Path: ctVerifyPath(b.ProjectID), Body: []byte(`{"code":"B-1"}`), Nonce: ctNonce()},
		} {
			ctWantDetail(t, sg.with(t).send(r), http.StatusForbidden, "")
			r.Nonce, r.Sig = ctNonce(), strings.Repeat("0", 64)
			ctWantDetail(t, sg.with(t).send(r), http.StatusUnauthorized, "")
		}
		if c := ctCode(t, ctSignerFor(t, s, base, b.Key), b.ProjectID, "B-1"); c.Status {
			t.Fatalf("a verify on another project's path redeemed its code")
		}
	})
	t.Run("revoked key", func(t *testing.T) {
		k, err := s.deps.Store.CreateAPIKey(context.Background(), tn.ProjectID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		sk := ctSignerFor(t, s, base, k)
		if r := sk.get(proj, ""); r.Status != http.StatusOK {
			t.Fatalf("fresh key: %d %s", r.Status, r.Body)
		}
		if err := s.deps.Store.RevokeAPIKey(context.Background(), k.ID); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 3*time.Second, "revocation to take effect", func() (bool, string) {
			r := sk.get(proj, "")
			return r.Status == http.StatusUnauthorized, fmt.Sprintf("%d %s", r.Status, r.Body)
		})
		ctWantDetail(t, sk.get(proj, ""), http.StatusUnauthorized, "revoked")
		ctWantDetail(t, sk.post(ctVerifyPath(tn.ProjectID), map[string]any{"code": "AU-R"}, nil), http.StatusUnauthorized, "")
		if c := ctCode(t, sg, tn.ProjectID, "AU-R"); c.Status {
			t.Fatalf("a revoked key redeemed a code")
		}
	})
	t.Run("disabled project", func(t *testing.T) {
		spd := spd.with(t)
		id := ctCodeID(t, s, pd.ProjectID, "PD-1")
		for _, p := range []string{ctProject(pd.ProjectID), ctProject(pd.ProjectID) + "/codes", ctByCodePath(pd.ProjectID, "PD-1"), ctProject(pd.ProjectID) + "/codes/" + id} {
			ctWantDetail(t, spd.get(p, ""), http.StatusUnauthorized, "disabled")
		}
	})
}

func ctTestSignatureFormats(t *testing.T, s *stack, base string) {
	tn := s.newTenant(nil)
	sg := ctSignerFor(t, s, base, tn.Key)
	s.importCodes(tn.ProjectID, nil, "A/B C", "XA%B1", "AXB1", "a b/c-1", "AB/C", "ab c")
	proj := ctProject(tn.ProjectID)

	t.Run("encoded path", func(t *testing.T) {
		path := proj + "/codes/by-code/A%2FB%20C"
		for _, nonce := range []string{"", ctNonce()} {
			ts := strconv.FormatInt(time.Now().Unix(), 10)
			sts := "GET\n" + path + "\n\n" + contract.EmptyBodySHA256 + "\n" + ts
			if nonce != "" {
				sts += "\n" + nonce
			}
			req := sg.build(ctReq{Method: http.MethodGet, Path: path, Nonce: nonce, Sig: ctSign(sg.secret, sts),
				Header: http.Header{"X-Timestamp": {ts}}})
			var c contract.Code
			ctDo(t, sg.hc, req).decode(t, http.StatusOK, &c)
			if c.Code != "A/B C" {
				t.Fatalf("by-code A%%2FB%%20C answered %q", c.Code)
			}
		}
		// The path is signed as sent: its decoded form is not the signed one.
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		sts := "GET\n" + proj + "/codes/by-code/A/B C\n\n" + contract.EmptyBodySHA256 + "\n" + ts
		req := sg.build(ctReq{Method: http.MethodGet, Path: path, Sig: ctSign(sg.secret, sts), Header: http.Header{"X-Timestamp": {ts}}})
		ctWantDetail(t, ctDo(t, sg.hc, req), http.StatusUnauthorized, "")
	})
	t.Run("repeated and encoded query keys", func(t *testing.T) {
		const query = "status=unused&search=a%25b&page=1&page_size=5&search=x"
		const sorted = "page=1&page_size=5&search=a%25b&search=x&status=unused"
		resp := sg.with(t).send(ctReq{Method: http.MethodGet, Path: proj + "/codes", Query: query, Nonce: ctNonce(), SignQuery: ctPtr(sorted)})
		var p contract.CodePage
		resp.decode(t, http.StatusOK, &p)
		if got := ctValues(p.Items); !slices.Equal(got, []string{"XA%B1"}) || p.Total != 1 || p.PageSize != 5 {
			t.Fatalf("search a%%b: %s", resp.Body)
		}
		for name, q := range map[string]string{
			"decoded":  "page=1&page_size=5&search=a%b&search=x&status=unused",
			"unsorted": query,
		} {
			r := sg.with(t).send(ctReq{Method: http.MethodGet, Path: proj + "/codes", Query: query, Nonce: ctNonce(), SignQuery: ctPtr(q)})
			if r.Status != http.StatusUnauthorized {
				t.Errorf("query signed %s: %d, want 401", name, r.Status)
			}
		}
	})
	t.Run("python SDK", func(t *testing.T) {
		// requests builds the query with urllib.parse.urlencode (quote_plus: a space is '+',
		// '/' is %2F) in the order of the params dict, and the original SDK signs five lines:
		// no X-Nonce, the query pairs sorted.
		const sent = "status=unused&search=a+b%2Fc&page=1"
		const signed = "page=1&search=a+b%2Fc&status=unused"
		path := proj + "/codes"
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		sts := "GET\n" + path + "\n" + signed + "\n" + contract.EmptyBodySHA256 + "\n" + ts
		req := sg.build(ctReq{Method: http.MethodGet, Path: path, Query: sent, Sig: ctSign(sg.secret, sts), Header: http.Header{"X-Timestamp": {ts}}})
		var p contract.CodePage
		ctDo(t, sg.hc, req).decode(t, http.StatusOK, &p)
		if got := ctValues(p.Items); !slices.Equal(got, []string{"a b/c-1"}) {
			t.Fatalf("search \"a b/c\" sent as a+b%%2Fc: %v", got)
		}
		// And a POST as json.dumps writes it: ", " and ": " separators.
		body := []byte(`{"code": "ab c", "verified_by": "py-sdk"}`)
		sum := sha256.Sum256(body)
		vpath := ctVerifyPath(tn.ProjectID)
		sts = "POST\n" + vpath + "\n\n" + hex.EncodeToString(sum[:]) + "\n" + ts
		req = sg.build(ctReq{Method: http.MethodPost, Path: vpath, Body: body, Sig: ctSign(sg.secret, sts), Header: http.Header{"X-Timestamp": {ts}}})
		var o ctOutcome
		ctDo(t, sg.hc, req).decode(t, http.StatusOK, &o)
		if !o.Success {
			t.Fatalf("python-style verify: %+v", o)
		}
	})
}

func ctTestRateLimit(t *testing.T, s *stack, base string) {
	tn := s.newTenant(nil)
	s.importCodes(tn.ProjectID, nil, "RL-1", "RL-2")
	ctx := context.Background()
	proj := ctProject(tn.ProjectID)

	wantHeaders := func(t *testing.T, r ctResp, limit, remaining string) {
		t.Helper()
		for h, want := range map[string]string{"X-RateLimit-Limit": limit, "X-RateLimit-Remaining": remaining, "X-RateLimit-Reset": ""} {
			got := r.Header.Get(h)
			if _, err := strconv.Atoi(got); err != nil || (want != "" && got != want) {
				t.Errorf("%s: %q, want %q", h, got, want)
			}
		}
	}
	t.Run("unlimited key", func(t *testing.T) {
		sg := ctSignerFor(t, s, base, tn.Key)
		wantHeaders(t, sg.get(proj, ""), "", "")
		wantHeaders(t, sg.post(ctVerifyPath(tn.ProjectID), map[string]any{"code": "NOPE"}, nil), "", "")
	})
	t.Run("GET", func(t *testing.T) {
		k, err := s.deps.Store.CreateAPIKey(ctx, tn.ProjectID, 1, 2)
		if err != nil {
			t.Fatal(err)
		}
		sg := ctSignerFor(t, s, base, k)
		r := sg.get(proj, "")
		if r.Status != http.StatusOK {
			t.Fatalf("first: %d %s", r.Status, r.Body)
		}
		wantHeaders(t, r, "2", "1")
		r = sg.get(proj+"/codes", "")
		if r.Status != http.StatusOK {
			t.Fatalf("second: %d %s", r.Status, r.Body)
		}
		wantHeaders(t, r, "2", "0")
		third := ctReq{Method: http.MethodGet, Path: proj, Nonce: ctNonce(), TS: time.Now().Unix()}
		r = sg.send(third)
		ctWantDetail(t, r, http.StatusTooManyRequests, "")
		wantHeaders(t, r, "2", "0")
		after, err := strconv.Atoi(r.Header.Get("Retry-After"))
		if err != nil || after < 1 || after > 2 {
			t.Fatalf("Retry-After %q, want whole seconds, 1 or 2", r.Header.Get("Retry-After"))
		}
		// A refused request used up neither a token nor its nonce: sent unchanged after
		// Retry-After, it is answered.
		time.Sleep(time.Duration(after) * time.Second)
		if r := sg.send(third); r.Status != http.StatusOK {
			t.Fatalf("the same request after Retry-After: %d %s", r.Status, r.Body)
		}
	})
	t.Run("verify", func(t *testing.T) {
		k, err := s.deps.Store.CreateAPIKey(ctx, tn.ProjectID, 0.5, 1)
		if err != nil {
			t.Fatal(err)
		}
		sg := ctSignerFor(t, s, base, k)
		var o ctOutcome
		r := sg.post(ctVerifyPath(tn.ProjectID), map[string]any{"code": "RL-1"}, nil)
		r.decode(t, http.StatusOK, &o)
		wantHeaders(t, r, "1", "0")
		r = sg.post(ctVerifyPath(tn.ProjectID), map[string]any{"code": "RL-2"}, nil)
		ctWantDetail(t, r, http.StatusTooManyRequests, "")
		if after, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || after < 1 || after > 2 {
			t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
		}
		wantHeaders(t, r, "1", "0")
		if c := ctCode(t, ctSignerFor(t, s, base, tn.Key), tn.ProjectID, "RL-2"); c.Status {
			t.Fatalf("a rate-limited verify redeemed the code")
		}
	})
}

func ctTestIdempotency(t *testing.T, s *stack, base string) {
	tn := s.newTenant(nil)
	sg := ctSignerFor(t, s, base, tn.Key)
	s.importCodes(tn.ProjectID, nil, "IDEM-1", "IDEM-2", "IDEM-3")
	vpath, rpath := ctVerifyPath(tn.ProjectID), ctReactivatePath(tn.ProjectID)
	idem := func(k string) http.Header { return http.Header{"Idempotency-Key": {k}} }

	t.Run("retry replays the first answer", func(t *testing.T) {
		sg := sg.with(t)
		body := map[string]any{"code": "IDEM-1", "verified_by": "checkout"}
		first := sg.post(vpath, body, idem("order-1"))
		var o ctOutcome
		first.decode(t, http.StatusOK, &o)
		if !o.Success || first.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("first: %s (Idempotent-Replayed %q)", first.Body, first.Header.Get("Idempotent-Replayed"))
		}
		time.Sleep(1100 * time.Millisecond) // a retry in a later second must still show the first verified_at
		again := sg.post(vpath, body, idem("order-1"))
		if again.Status != http.StatusOK || !bytes.Equal(again.Body, first.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("retry: %d %s (Idempotent-Replayed %q); want 200 %s with Idempotent-Replayed: true",
				again.Status, again.Body, again.Header.Get("Idempotent-Replayed"), first.Body)
		}
		ctWantDetail(t, sg.post(vpath, map[string]any{"code": "IDEM-1", "verified_by": "someone else"}, idem("order-1")), http.StatusConflict, "")
		ctWantDetail(t, sg.post(rpath, body, idem("order-1")), http.StatusConflict, "")
		// One log for the first verify; none for the replay or the conflicts. A plain attempt
		// afterwards is the second.
		sg.post(vpath, map[string]any{"code": "IDEM-1"}, nil).decode(t, http.StatusOK, &o)
		if o.Success || o.ErrorCode == nil || *o.ErrorCode != string(contract.CodeAlreadyUsed) {
			t.Fatalf("plain verify after: %+v", o)
		}
		id := ctCodeID(t, s, tn.ProjectID, "IDEM-1")
		ctWaitLogs(t, s, id, 2)
		var results []string
		if err := s.deps.Store.Pool().QueryRow(context.Background(),
			`SELECT array_agg(result ORDER BY verified_at) FROM verification_logs WHERE code_id = $1`, id).Scan(&results); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(results, []string{contract.ResultSuccess, contract.ResultFailed}) {
			t.Fatalf("logs of IDEM-1: %v", results)
		}
	})
	t.Run("retry changes nothing", func(t *testing.T) {
		sg := sg.with(t)
		body := map[string]any{"code": "IDEM-2"}
		var o ctOutcome
		first := sg.post(vpath, body, idem("order-2"))
		first.decode(t, http.StatusOK, &o)
		sg.post(rpath, body, nil).decode(t, http.StatusOK, &o)
		if !o.Success {
			t.Fatalf("reactivate: %+v", o)
		}
		again := sg.post(vpath, body, idem("order-2"))
		if !bytes.Equal(again.Body, first.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("retry after a reactivation: %s, want the stored %s", again.Body, first.Body)
		}
		if c := ctCode(t, sg, tn.ProjectID, "IDEM-2"); c.Status {
			t.Fatalf("a replayed verify redeemed the code again")
		}
	})
	t.Run("invalid key", func(t *testing.T) {
		sg := sg.with(t)
		for name, k := range map[string]string{
			"256 characters": strings.Repeat("k", 256),
			"non-ASCII":      "clé-1",
			"empty":          "",
			"control":        "a\tb",
		} {
			t.Run(name, func(t *testing.T) {
				ctWantDetail(t, sg.with(t).post(vpath, map[string]any{"code": "IDEM-3"}, idem(k)), http.StatusBadRequest, "Idempotency-Key")
			})
		}
		if c := ctCode(t, sg, tn.ProjectID, "IDEM-3"); c.Status {
			t.Fatalf("a refused verify redeemed the code")
		}
		var o ctOutcome
		sg.post(vpath, map[string]any{"code": "IDEM-3"}, idem(strings.Repeat("k", 255))).decode(t, http.StatusOK, &o)
		if !o.Success {
			t.Fatalf("a 255-character Idempotency-Key: %+v", o)
		}
		ctWaitLogs(t, s, ctCodeID(t, s, tn.ProjectID, "IDEM-3"), 1)
	})
}
