package httpapi_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/api/httpapi"
	"github.com/prometheus/client_golang/prometheus"
)

// badCredentials is the one detail of an unknown or malformed key id and of a bad signature.
const badCredentials = "Invalid API key or signature"

// TestAuthentication is the order of the contract's authentication: every failure is a 401
// with a sentence, 401 comes before 403, and a refused request never reaches Verify or
// Reactivate.
func TestAuthentication(t *testing.T) {
	body := []byte(`{"code":"ABC"}`)
	ts := strconv.FormatInt(now, 10)
	signed := func(secret, method, path, query string, body []byte, ts, nonce string) string {
		return contract.Sign(secret, contract.StringToSign(method, path, query, contract.BodySHA256(body), ts, nonce))
	}
	replayed := func(e *env) {
		e.hot.admit = func(contract.Admission) (contract.RateState, error) {
			return contract.RateState{Remaining: -1}, contract.ErrReplayed
		}
	}
	post := func(path string) req { return req{method: http.MethodPost, path: path, body: body} }
	get := func(path string) req { return req{path: path} }
	with := func(r req, f func(*req)) req { f(&r); return r }

	cases := []struct {
		name    string
		req     req
		setup   func(*env)
		status  int
		mention string
		// noLookup: the key id was refused before the records were asked for it.
		noLookup bool
	}{
		{name: "missing X-API-Key", req: with(post(verifyPath(projectA)), func(r *req) { r.drop = []string{"X-API-Key"} }),
			status: 401, mention: "X-API-Key", noLookup: true},
		{name: "empty X-API-Key", req: with(post(verifyPath(projectA)), func(r *req) { r.header = map[string]string{"X-API-Key": ""} }),
			status: 401, mention: "X-API-Key", noLookup: true},
		{name: "missing X-Timestamp", req: with(post(verifyPath(projectA)), func(r *req) { r.drop = []string{"X-Timestamp"} }),
			status: 401, mention: "X-Timestamp", noLookup: true},
		{name: "missing X-Signature", req: with(post(verifyPath(projectA)), func(r *req) { r.drop = []string{"X-Signature"} }),
			status: 401, mention: "X-Signature", noLookup: true},
		{name: "missing all three", req: with(get(projectPath(projectA)), func(r *req) { r.drop = []string{"X-API-Key", "X-Timestamp", "X-Signature"} }),
			status: 401, mention: "X-API-Key", noLookup: true},
		{name: "timestamp not a number", req: with(post(verifyPath(projectA)), func(r *req) { r.ts = "17e8" }),
			status: 401, mention: "X-Timestamp", noLookup: true},
		{name: "timestamp with a fraction", req: with(post(verifyPath(projectA)), func(r *req) { r.ts = ts + ".5" }),
			status: 401, mention: "X-Timestamp", noLookup: true},
		{name: "timestamp as a date", req: with(post(verifyPath(projectA)), func(r *req) { r.ts = "2027-01-15T08:00:00Z" }),
			status: 401, mention: "X-Timestamp", noLookup: true},
		{name: "nonce too short", req: with(post(verifyPath(projectA)), func(r *req) { r.nonce = "short-nonce" }),
			status: 401, mention: "X-Nonce", noLookup: true},
		{name: "nonce too long", req: with(post(verifyPath(projectA)), func(r *req) { r.nonce = strings.Repeat("n", 65) }),
			status: 401, mention: "X-Nonce", noLookup: true},
		{name: "nonce with a forbidden character", req: with(post(verifyPath(projectA)), func(r *req) { r.nonce = "nonce.with.dots.1234" }),
			status: 401, mention: "X-Nonce", noLookup: true},
		{name: "empty X-Nonce", req: with(post(verifyPath(projectA)), func(r *req) { r.header = map[string]string{"X-Nonce": ""} }),
			status: 401, mention: "X-Nonce", noLookup: true},
		{name: "key id in upper case", req: with(post(verifyPath(projectA)), func(r *req) {
			r.header = map[string]string{"X-API-Key": strings.ToUpper(keyA.ID)}
		}), status: 401, mention: badCredentials, noLookup: true},
		{name: "key id of 31 characters", req: with(post(verifyPath(projectA)), func(r *req) { r.header = map[string]string{"X-API-Key": keyA.ID[:31]} }),
			status: 401, mention: badCredentials, noLookup: true},
		{name: "key id with hyphens", req: with(post(verifyPath(projectA)), func(r *req) {
			id := keyA.ID
			r.header = map[string]string{"X-API-Key": id[:8] + "-" + id[8:12] + "-" + id[12:16] + "-" + id[16:20] + "-" + id[20:]}
		}), status: 401, mention: badCredentials, noLookup: true},
		{name: "unknown key", req: with(post(verifyPath(projectA)), func(r *req) {
			k := contract.APIKey{ID: unknownK, Secret: secretOf('a')}
			r.key = &k
		}), status: 401, mention: badCredentials},
		{name: "signature made with another secret", req: with(post(verifyPath(projectA)), func(r *req) {
			r.sig = signed(secretOf('z'), "POST", verifyPath(projectA), "", body, ts, "")
		}), status: 401, mention: badCredentials},
		{name: "signature over another body", req: with(post(verifyPath(projectA)), func(r *req) {
			r.sig = signed(keyA.Secret, "POST", verifyPath(projectA), "", []byte(`{"code":"ABD"}`), ts, "")
		}), status: 401, mention: badCredentials},
		{name: "signature over another path", req: with(post(verifyPath(projectA)), func(r *req) {
			r.sig = signed(keyA.Secret, "POST", reactPath(projectA), "", body, ts, "")
		}), status: 401, mention: badCredentials},
		{name: "signature over another method", req: with(get(projectPath(projectA)), func(r *req) {
			r.sig = signed(keyA.Secret, "POST", projectPath(projectA), "", nil, ts, "")
		}), status: 401, mention: badCredentials},
		{name: "signature over another query", req: with(get(projectPath(projectA)+"/codes"), func(r *req) {
			r.query = "page=2"
			r.sig = signed(keyA.Secret, "GET", projectPath(projectA)+"/codes", "page=1", nil, ts, "")
		}), status: 401, mention: badCredentials},
		{name: "signature over another timestamp", req: with(post(verifyPath(projectA)), func(r *req) {
			r.sig = signed(keyA.Secret, "POST", verifyPath(projectA), "", body, strconv.FormatInt(now-1, 10), "")
		}), status: 401, mention: badCredentials},
		{name: "signature without the nonce line", req: with(post(verifyPath(projectA)), func(r *req) {
			r.nonce = newNonce()
			r.sig = signed(keyA.Secret, "POST", verifyPath(projectA), "", body, ts, "")
		}), status: 401, mention: badCredentials},
		{name: "signature not hex", req: with(post(verifyPath(projectA)), func(r *req) { r.sig = strings.Repeat("zz", 32) }),
			status: 401, mention: badCredentials},
		{name: "signature truncated", req: with(post(verifyPath(projectA)), func(r *req) {
			r.sig = signed(keyA.Secret, "POST", verifyPath(projectA), "", body, ts, "")[:63]
		}), status: 401, mention: badCredentials},
		{name: "revoked key with a valid signature", req: with(post(verifyPath(projectA)), func(r *req) { r.key = &keyRevoked }),
			status: 401, mention: "revoked"},
		{name: "revoked key on a GET", req: with(get(projectPath(projectA)), func(r *req) { r.key = &keyRevoked }),
			status: 401, mention: "revoked"},
		{name: "timestamp 301 s behind", req: with(post(verifyPath(projectA)), func(r *req) { r.ts = strconv.FormatInt(now-301, 10) }),
			status: 401, mention: "server time is " + ts},
		{name: "timestamp 301 s ahead", req: with(post(verifyPath(projectA)), func(r *req) { r.ts = strconv.FormatInt(now+301, 10) }),
			status: 401, mention: "server time is " + ts},
		{name: "timestamp in milliseconds", req: with(get(projectPath(projectA)), func(r *req) { r.ts = strconv.FormatInt(now*1000, 10) }),
			status: 401, mention: "Unix seconds"},
		{name: "bad signature on another project's path", req: with(post(verifyPath(projectB)), func(r *req) {
			r.sig = signed(secretOf('z'), "POST", verifyPath(projectB), "", body, ts, "")
		}), status: 401, mention: badCredentials},
		{name: "bad signature on another project's GET path", req: with(get(projectPath(projectB)), func(r *req) {
			r.sig = signed(secretOf('z'), "GET", projectPath(projectB), "", nil, ts, "")
		}), status: 401, mention: badCredentials},
		{name: "unknown key on another project's path", req: with(post(verifyPath(projectB)), func(r *req) {
			k := contract.APIKey{ID: unknownK, Secret: secretOf('a')}
			r.key = &k
		}), status: 401, mention: badCredentials},
		{name: "revoked key on another project's path", req: with(post(verifyPath(projectB)), func(r *req) { r.key = &keyRevoked }),
			status: 401, mention: "revoked"},
		{name: "skewed timestamp on another project's path", req: with(get(projectPath(projectB)), func(r *req) { r.ts = strconv.FormatInt(now-3600, 10) }),
			status: 401, mention: "server time"},
		{name: "valid key on another project's verify path", req: post(verifyPath(projectB)), status: 403, mention: "project"},
		{name: "valid key on another project's reactivate path", req: post(reactPath(projectB)), status: 403, mention: "project"},
		{name: "valid key on another project's GET path", req: get(projectPath(projectB)), status: 403, mention: "project"},
		{name: "valid key on another project's code path", req: get(projectPath(projectB) + "/codes/" + codeID1), status: 403, mention: "project"},
		{name: "valid key on a malformed project id", req: get(projectPath("not-a-project") + "/codes"), status: 403, mention: "project"},
		{name: "valid key of a disabled project on another project's path", req: with(get(projectPath(projectA)), func(r *req) { r.key = &keyDisabled }),
			status: 403, mention: "project"},
		{name: "replay on another project's verify path", req: post(verifyPath(projectB)), setup: replayed,
			status: 401, mention: "Request replayed"},
		{name: "replay with a nonce on another project's GET path", req: with(get(projectPath(projectB)), func(r *req) { r.nonce = newNonce() }),
			setup: replayed, status: 401, mention: "Request replayed"},
		{name: "replay of a GET with a nonce", req: with(get(projectPath(projectA)), func(r *req) { r.nonce = newNonce() }),
			setup: replayed, status: 401, mention: "Request replayed"},
		{name: "disabled project, GET project", req: with(get(projectPath(projectD)), func(r *req) { r.key = &keyDisabled }),
			status: 401, mention: "disabled"},
		{name: "disabled project, list", req: with(get(projectPath(projectD)+"/codes"), func(r *req) { r.key = &keyDisabled }),
			status: 401, mention: "disabled"},
		{name: "disabled project, code by value", req: with(get(projectPath(projectD)+"/codes/by-code/ABC"), func(r *req) { r.key = &keyDisabled }),
			status: 401, mention: "disabled"},
		{name: "disabled project, code by id", req: with(get(projectPath(projectD)+"/codes/"+codeID1), func(r *req) { r.key = &keyDisabled }),
			status: 401, mention: "disabled"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if tc.setup != nil {
				tc.setup(e)
			}
			w := e.do(tc.req)
			detail := wantDetail(t, w, tc.status, tc.mention)
			if !unicode.IsUpper([]rune(detail)[0]) {
				t.Errorf("detail %q does not start a sentence", detail)
			}
			if calls := e.hot.Calls("Verify", "Reactivate"); len(calls) != 0 {
				t.Errorf("the refused request reached the hot path: %+v", calls)
			}
			wantNoRead(t, e)
			if tc.noLookup && len(e.rec.Calls()) != 0 {
				t.Errorf("a malformed request looked its key up: %v", e.rec.Calls())
			}
		})
	}
}

// TestStringToSignByHand pins the string to sign without the package's helper: five lines,
// a sixth with the nonce, the query's pairs as sent sorted by key.
func TestStringToSignByHand(t *testing.T) {
	e := newEnv(t)
	e.addCode(contract.CodeRecord{ID: codeID1, ProjectID: projectA, Code: "SPRING-1", CreatedAt: now - 60})
	hmacHex := func(secret, s string) string {
		m := hmac.New(sha256.New, []byte(secret))
		m.Write([]byte(s))
		return hex.EncodeToString(m.Sum(nil))
	}

	t.Run("POST with a nonce", func(t *testing.T) {
		body := []byte(`{"code":"SPRING-1","verified_by":"till 1"}`)
		bodyHash := sha256.Sum256(body)
		nonce := "hand-built-nonce-0001"
		sts := "POST\n" +
			"/api/v1/projects/" + projectA + "/codes/verify\n" +
			"\n" +
			hex.EncodeToString(bodyHash[:]) + "\n" +
			"1800000000\n" +
			nonce
		if got := contract.StringToSign("post", verifyPath(projectA), "", contract.BodySHA256(body), "1800000000", nonce); got != sts {
			t.Fatalf("StringToSign\n%q\nwant\n%q", got, sts)
		}
		w := e.do(req{method: http.MethodPost, path: verifyPath(projectA), body: body, nonce: nonce, sig: hmacHex(keyA.Secret, sts)})
		if r := decode[contract.VerifyResponse](t, w); !r.Success {
			t.Fatalf("verify signed by hand: %s", w.Body)
		}
	})

	t.Run("GET with a query, no nonce", func(t *testing.T) {
		// Sent in one order, signed sorted by key with the encoding untouched; no body is the
		// hash of the empty string.
		query := "status=used&search=a%20b&page=1"
		sts := "GET\n" +
			"/api/v1/projects/" + projectA + "/codes\n" +
			"page=1&search=a%20b&status=used\n" +
			"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n" +
			"1800000000"
		if got := contract.StringToSign("GET", projectPath(projectA)+"/codes", query, contract.EmptyBodySHA256, "1800000000", ""); got != sts {
			t.Fatalf("StringToSign\n%q\nwant\n%q", got, sts)
		}
		w := e.do(req{path: projectPath(projectA) + "/codes", query: query, sig: hmacHex(keyA.Secret, sts)})
		decode[contract.CodePage](t, w)
	})

	t.Run("path still percent-encoded", func(t *testing.T) {
		e.addCode(contract.CodeRecord{ID: codeID2, ProjectID: projectA, Code: "A+B/C D", CreatedAt: now - 60})
		path := "/api/v1/projects/" + projectA + "/codes/by-code/A%2BB%2FC%20D"
		sts := "GET\n" + path + "\n\n" + contract.EmptyBodySHA256 + "\n1800000000"
		w := e.do(req{path: path, sig: hmacHex(keyA.Secret, sts)})
		if c := decode[contract.Code](t, w); c.ID != codeID2 || c.Code != "A+B/C D" {
			t.Fatalf("code by value: %s", w.Body)
		}
	})
}

// The window is inclusive: 300 s either side of the server clock is accepted.
func TestTimestampWindowEdges(t *testing.T) {
	e := newEnv(t)
	for _, d := range []int64{-300, -1, 0, 1, 300} {
		w := e.do(req{path: projectPath(projectA), ts: strconv.FormatInt(now+d, 10)})
		if w.Code != http.StatusOK {
			t.Errorf("timestamp now%+d: %d %s", d, w.Code, w.Body)
		}
	}
}

// TestReplay: a POST is accepted once (without a nonce its signature identifies it), two
// identical GETs without a nonce are both answered, a GET with a nonce is accepted once.
// replayedNoNonce is the detail of a repeated request sent without X-Nonce, written out here
// so the test pins the words rather than the code's constant.
const replayedNoNonce = "Request replayed: to repeat a request within 300 seconds, send each one with its own X-Nonce"

func TestReplay(t *testing.T) {
	e := newEnv(t)
	e.addCode(contract.CodeRecord{ID: codeID1, ProjectID: projectA, Code: "ABC", CreatedAt: now - 60})
	post := req{method: http.MethodPost, path: verifyPath(projectA), body: []byte(`{"code":"ABC"}`)}
	if r := decode[contract.VerifyResponse](t, e.do(post)); !r.Success {
		t.Fatalf("first verify: %+v", r)
	}
	// Without X-Nonce the signature is the replay identity: the refusal says how to repeat a
	// request on purpose within the window.
	if d := wantDetail(t, e.do(post), http.StatusUnauthorized, "Request replayed"); d != replayedNoNonce {
		t.Errorf("detail of a repeated POST without X-Nonce %q, want %q", d, replayedNoNonce)
	}
	// A signature has one spelling, lowercase hex: the same MAC in another letter case is
	// refused before the hot path sees it, so it cannot pass for a new request.
	upper := post
	upper.sig = strings.ToUpper(contract.Sign(keyA.Secret, contract.StringToSign("POST", post.path, "", contract.BodySHA256(post.body), strconv.FormatInt(now, 10), "")))
	wantDetail(t, e.do(upper), http.StatusUnauthorized, badCredentials)
	if ops := e.hot.Calls("Verify"); len(ops) != 2 || ops[0].Op.ReplayKey != ops[1].Op.ReplayKey {
		t.Errorf("replay keys of the same request: %+v", ops)
	}

	get := req{path: projectPath(projectA)}
	for i := 0; i < 2; i++ {
		if w := e.do(get); w.Code != http.StatusOK {
			t.Fatalf("identical GET without a nonce #%d: %d %s", i+1, w.Code, w.Body)
		}
	}
	if calls := e.hot.Calls("Admit"); len(calls) != 0 {
		t.Errorf("a GET without a nonce of an unlimited key was admitted: %+v", calls)
	}
	get.nonce = newNonce()
	if w := e.do(get); w.Code != http.StatusOK {
		t.Fatalf("GET with a nonce: %d %s", w.Code, w.Body)
	}
	// A reused nonce is refused with the plain sentence: the client did send X-Nonce.
	if d := wantDetail(t, e.do(get), http.StatusUnauthorized, "Request replayed"); d != "Request replayed" {
		t.Errorf("detail of a reused nonce %q, want \"Request replayed\"", d)
	}
	adm := e.hot.Calls("Admit")
	if len(adm) != 2 || !adm[0].Adm.CheckReplay || adm[0].Adm.ReplayKey != contract.ReplayIdentity("", get.nonce) || adm[0].Adm.KeyID != keyA.ID || adm[0].Adm.ProjectID != projectA {
		t.Errorf("admissions of a GET with a nonce: %+v", adm)
	}
}

// A key's lookup is cached: a second request does not ask the records again.
func TestKeyLookupCached(t *testing.T) {
	e := newEnv(t)
	for i := 0; i < 3; i++ {
		if w := e.do(req{path: projectPath(projectA)}); w.Code != http.StatusOK {
			t.Fatalf("%d %s", w.Code, w.Body)
		}
	}
	n := 0
	for _, c := range e.rec.Calls() {
		if c == "APIKey" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("key looked up %d times, want 1", n)
	}
}

// TestUnknownKeyAndBadSignatureLookAlike: an attacker cannot tell a key id that exists from one
// that does not. An unknown key id, a malformed one and a known key with a bad signature get
// byte-identical answers; the access log and acv_auth_failures_total keep the difference.
func TestUnknownKeyAndBadSignatureLookAlike(t *testing.T) {
	e := newEnv(t)
	reg := prometheus.NewRegistry()
	e.reconfigure(t, func(c *httpapi.Config) { c.Registerer = reg })
	unknown := contract.APIKey{ID: unknownK, Secret: secretOf('a')}
	ts := strconv.FormatInt(now, 10)
	cases := []struct {
		name   string
		r      req
		reason string
	}{
		{"unknown key", req{path: projectPath(projectA), key: &unknown}, "unknown_key"},
		{"malformed key id", req{path: projectPath(projectA), header: map[string]string{"X-API-Key": "not-a-key-id"}}, "unknown_key"},
		{"bad signature", req{path: projectPath(projectA),
			sig: contract.Sign(secretOf('z'), contract.StringToSign("GET", projectPath(projectA), "", contract.EmptyBodySHA256, ts, ""))}, "bad_signature"},
	}
	var first *httptest.ResponseRecorder
	for _, tc := range cases {
		logged := len(e.log.String())
		w := e.do(tc.r)
		wantDetail(t, w, http.StatusUnauthorized, badCredentials)
		if first == nil {
			first = w
		} else {
			if !bytes.Equal(w.Body.Bytes(), first.Body.Bytes()) {
				t.Errorf("%s: body %q differs from %s's %q", tc.name, w.Body, cases[0].name, first.Body)
			}
			if !reflect.DeepEqual(w.Header(), first.Header()) {
				t.Errorf("%s: headers %v differ from %s's %v", tc.name, w.Header(), cases[0].name, first.Header())
			}
		}
		if line := e.log.String()[logged:]; !strings.Contains(line, "auth_failure="+tc.reason) {
			t.Errorf("%s: the access log does not name the reason %s: %s", tc.name, tc.reason, line)
		}
	}
	for reason, want := range map[string]float64{"unknown_key": 2, "bad_signature": 1} {
		if got := counterValue(t, reg, "acv_auth_failures_total", "reason", reason); got != want {
			t.Errorf("acv_auth_failures_total{reason=%q} = %v, want %v", reason, got, want)
		}
	}
}

// counterValue is the value of the counter series of name whose label is value in reg.
func counterValue(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no series %s{%s=%q}", name, label, value)
	return 0
}

// TestBadCredentialsShowTheStringToSign: the 401 of an unknown key id, a malformed one and a bad
// signature goes on to show the string to sign the server built from the request, so a client
// can see which line it signed differently. For the same request the detail is the same to the
// byte whichever of the three it was, and it holds no secret, no expected MAC, not the
// signature sent and not the key id.
func TestBadCredentialsShowTheStringToSign(t *testing.T) {
	ts := strconv.FormatInt(now, 10)
	unknown := contract.APIKey{ID: unknownK, Secret: secretOf('u')}
	for _, base := range []struct {
		name string
		r    req
		// sts is the string to sign the detail must show, written out by hand.
		sts string
		// lines is how the detail names the lines after X-Timestamp.
		lines string
	}{
		{"GET with a query and a nonce", req{path: projectPath(projectA) + "/codes", query: "status=used&search=a%20b&page=2", nonce: "detail-nonce-0123456789"},
			"GET\n" + projectPath(projectA) + "/codes\npage=2&search=a%20b&status=used\n" + contract.EmptyBodySHA256 + "\n" + ts + "\ndetail-nonce-0123456789",
			", X-Nonce)"},
		{"POST verify without a nonce", req{method: http.MethodPost, path: verifyPath(projectA), body: []byte(`{"code":"ABC"}`)},
			"POST\n" + verifyPath(projectA) + "\n\n" + contract.BodySHA256([]byte(`{"code":"ABC"}`)) + "\n" + ts,
			"; no X-Nonce line, as none was sent)"},
	} {
		t.Run(base.name, func(t *testing.T) {
			e := newEnv(t)
			good := contract.Sign(keyA.Secret, base.sts)
			variants := []struct {
				name string
				f    func(*req)
			}{
				{"unknown key", func(r *req) { r.key = &unknown }},
				{"malformed key id", func(r *req) { r.header = map[string]string{"X-API-Key": "not-a-key-id"} }},
				{"signature made with another secret", func(r *req) { r.sig = contract.Sign(secretOf('z'), base.sts) }},
				{"signature one bit off", func(r *req) { r.sig = good[:63] + string("10"[good[63]&1]) }},
				{"signature not hex", func(r *req) { r.sig = strings.Repeat("zz", 32) }},
			}
			var first string
			for _, v := range variants {
				r := base.r
				v.f(&r)
				built := r.build()
				sent := built.Header.Get("X-Signature")
				w := httptest.NewRecorder()
				e.srv.ServeHTTP(w, built)
				detail := wantDetail(t, w, http.StatusUnauthorized, badCredentials)
				want := badCredentials + ": X-Signature must be the lowercase hex HMAC-SHA256, keyed with the API secret, of " +
					strconv.Quote(base.sts) + " (METHOD, PATH as sent, QUERY as sent with its pairs sorted by key, SHA-256 hex of the body, X-Timestamp" + base.lines
				if detail != want {
					t.Errorf("%s: detail\n%s\nwant\n%s", v.name, detail, want)
				}
				if first == "" {
					first = w.Body.String()
				} else if w.Body.String() != first {
					t.Errorf("%s: body %s differs from the unknown key's %s", v.name, w.Body, first)
				}
				for what, s := range map[string]string{
					"the key's secret": keyA.Secret, "the unknown key's secret": unknown.Secret, "the other secret": secretOf('z'),
					"the expected MAC": good, "the signature sent": sent, "the key id": keyA.ID, "the unknown key id": unknownK,
				} {
					if strings.Contains(w.Body.String(), s) || strings.Contains(detail, s) {
						t.Errorf("%s: the detail shows %s: %s", v.name, what, detail)
					}
				}
			}
			wantNoOperation(t, e)
		})
	}
}
