package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/acv/acv/internal/testkit"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/api/httpapi"
)

// The handler tests run the adapter against in-memory fakes of Records and HotPath: no Redis,
// Postgres or Kafka, no network. The fakes record every call, so a test can tell that a refused
// request reached neither the hot path nor the records (nothing changed, no nonce spent).

// now is the fixed clock of every test server.
const now = 1_800_000_000

var fixedNow = time.Unix(now, 0)

// Fixed identifiers, in the wire form of ids (32 lowercase hex characters).
const (
	projectA = "0190a0a0000070008000000000000a0a" // the project of the main key
	projectB = "0190b0b0000070008000000000000b0b" // another tenant's project
	projectD = "0190d0d0000070008000000000000d0d" // a disabled project
	eventID  = "0190e0e0000070008000000000000e0e"
	codeID1  = "0190c0c0000070008000000000000001"
	codeID2  = "0190c0c0000070008000000000000002"
	unknownK = "0190f0f0000070008000000000000f0f" // a well-formed key id no key has
)

func secretOf(b byte) string { return strings.Repeat(string(rune(b)), 64) }

var (
	keyA        = contract.APIKey{ID: "0190a0a0000070008000000000000001", ProjectID: projectA, Secret: secretOf('a'), ProjectEnabled: true}
	keyB        = contract.APIKey{ID: "0190b0b0000070008000000000000001", ProjectID: projectB, Secret: secretOf('b'), ProjectEnabled: true}
	keyRevoked  = contract.APIKey{ID: "0190a0a0000070008000000000000002", ProjectID: projectA, Secret: secretOf('c'), ProjectEnabled: true, Revoked: true}
	keyDisabled = contract.APIKey{ID: "0190d0d0000070008000000000000001", ProjectID: projectD, Secret: secretOf('d'), ProjectEnabled: false}
	// keyLimited has a token bucket of 2 tokens a second up to 10.
	keyLimited = contract.APIKey{ID: "0190a0a0000070008000000000000003", ProjectID: projectA, Secret: secretOf('e'), ProjectEnabled: true, RatePerSec: 2, Burst: 10}
)

func projectPath(pid string) string { return "/api/v1/projects/" + pid }
func verifyPath(pid string) string  { return projectPath(pid) + "/codes/verify" }
func reactPath(pid string) string   { return projectPath(pid) + "/codes/reactivate" }

// fakeRecords is the system of record in memory.
type fakeRecords struct {
	mu       sync.Mutex
	keys     map[string]contract.APIKey
	projects map[string]contract.Project
	stats    map[string]contract.Statistics
	codes    []contract.CodeRecord
	logs     map[string][]contract.LogEntry
	// err, when set, is what every read but APIKey returns.
	err error
	// keyErr, when set, is what APIKey returns.
	keyErr error

	calls   []string // method names, in order
	queries []contract.ListQuery
}

func (f *fakeRecords) record(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, name)
	return f.err
}

func (f *fakeRecords) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeRecords) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls, f.queries = nil, nil
}

func (f *fakeRecords) APIKey(_ context.Context, id string) (contract.APIKey, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "APIKey")
	if f.keyErr != nil {
		return contract.APIKey{}, f.keyErr
	}
	k, ok := f.keys[id]
	if !ok {
		return contract.APIKey{}, contract.ErrNotFound
	}
	return k, nil
}

func (f *fakeRecords) Project(_ context.Context, id string) (contract.Project, error) {
	if err := f.record("Project"); err != nil {
		return contract.Project{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.projects[id]
	if !ok {
		return contract.Project{}, contract.ErrNotFound
	}
	return p, nil
}

func (f *fakeRecords) Statistics(_ context.Context, projectID string, _ int64) (contract.Statistics, error) {
	if err := f.record("Statistics"); err != nil {
		return contract.Statistics{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.projects[projectID]; !ok {
		return contract.Statistics{}, contract.ErrNotFound
	}
	return f.stats[projectID], nil
}

// ProjectStatistics is Statistics with the project's codes currently used (verified, not
// disabled), newest verified_at first, as the store reads them.
func (f *fakeRecords) ProjectStatistics(ctx context.Context, projectID string, now int64, limit int) (contract.Statistics, []contract.RecentVerification, error) {
	if err := f.record("ProjectStatistics"); err != nil {
		return contract.Statistics{}, nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.projects[projectID]; !ok {
		return contract.Statistics{}, nil, contract.ErrNotFound
	}
	var used []contract.CodeRecord
	for _, c := range f.codes {
		if c.ProjectID == projectID && c.VerifiedAtMs != 0 && !c.Disabled {
			used = append(used, c)
		}
	}
	sort.SliceStable(used, func(i, j int) bool { return used[i].VerifiedAtMs > used[j].VerifiedAtMs })
	out := []contract.RecentVerification{}
	for _, c := range used[:min(limit, len(used))] {
		r := contract.RecentVerification{Code: c.Code, VerifiedAt: c.VerifiedAtMs / 1000}
		if c.VerifiedBy != "" {
			by := c.VerifiedBy
			r.VerifiedBy = &by
		}
		out = append(out, r)
	}
	return f.stats[projectID], out, nil
}

func (f *fakeRecords) find(match func(contract.CodeRecord) bool) (contract.CodeRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.codes {
		if match(c) {
			return c, nil
		}
	}
	return contract.CodeRecord{}, contract.ErrNotFound
}

func (f *fakeRecords) CodeByValue(_ context.Context, projectID, value string) (contract.CodeRecord, error) {
	if err := f.record("CodeByValue"); err != nil {
		return contract.CodeRecord{}, err
	}
	return f.find(func(c contract.CodeRecord) bool { return c.ProjectID == projectID && c.Code == value })
}

func (f *fakeRecords) CodeByID(_ context.Context, projectID, id string) (contract.CodeRecord, error) {
	if err := f.record("CodeByID"); err != nil {
		return contract.CodeRecord{}, err
	}
	return f.find(func(c contract.CodeRecord) bool { return c.ProjectID == projectID && c.ID == id })
}

// ListCodes filters by project only; the query is recorded for the test to check.
func (f *fakeRecords) ListCodes(_ context.Context, projectID string, q contract.ListQuery, _ int64) ([]contract.CodeRecord, int64, error) {
	if err := f.record("ListCodes"); err != nil {
		return nil, 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries = append(f.queries, q)
	var all []contract.CodeRecord
	for _, c := range f.codes {
		if c.ProjectID == projectID {
			all = append(all, c)
		}
	}
	from := min((q.Page-1)*q.PageSize, len(all))
	to := min(from+q.PageSize, len(all))
	return all[from:to], int64(len(all)), nil
}

func (f *fakeRecords) Logs(_ context.Context, codeID string, limit int) ([]contract.LogEntry, error) {
	if err := f.record("Logs"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.logs[codeID]
	return l[:min(limit, len(l))], nil
}

// hotCall is one call the fake hot path received.
type hotCall struct {
	Method string // Verify, Reactivate, Admit or LiveCode
	Op     contract.Operation
	Adm    contract.Admission
}

// fakeHot is the Redis hot path in memory. By default it keeps a replay set and the codes'
// use state and answers as the contract's table does for existing and unknown codes; the hooks
// replace those answers.
type fakeHot struct {
	mu    sync.Mutex
	calls []hotCall
	seen  map[string]bool                 // (key id, replay key) pairs already admitted
	codes map[string]*contract.CodeRecord // live state by project id + "/" + value

	// operate, when set, answers Verify and Reactivate.
	operate func(contract.Operation) (contract.OperationResult, error)
	// admit, when set, answers Admit.
	admit func(contract.Admission) (contract.RateState, error)
	// liveErr, when set, is what LiveCode returns.
	liveErr error
}

func newFakeHot() *fakeHot {
	return &fakeHot{seen: map[string]bool{}, codes: map[string]*contract.CodeRecord{}}
}

func (h *fakeHot) put(c contract.CodeRecord) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.codes[c.ProjectID+"/"+c.Code] = &c
}

func (h *fakeHot) live(projectID, value string) (contract.CodeRecord, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.codes[projectID+"/"+value]
	if !ok {
		return contract.CodeRecord{}, false
	}
	return *c, true
}

// Calls returns the calls so far, optionally only those of the named methods.
func (h *fakeHot) Calls(methods ...string) []hotCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []hotCall
	for _, c := range h.calls {
		if len(methods) == 0 || contains(methods, c.Method) {
			out = append(out, c)
		}
	}
	return out
}

func (h *fakeHot) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (h *fakeHot) Verify(_ context.Context, op contract.Operation) (contract.OperationResult, error) {
	return h.run("Verify", op)
}

func (h *fakeHot) Reactivate(_ context.Context, op contract.Operation) (contract.OperationResult, error) {
	return h.run("Reactivate", op)
}

func (h *fakeHot) run(method string, op contract.Operation) (contract.OperationResult, error) {
	h.mu.Lock()
	h.calls = append(h.calls, hotCall{Method: method, Op: op})
	hook := h.operate
	h.mu.Unlock()
	if hook != nil {
		return hook(op)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	rate := contract.RateState{Remaining: -1}
	if op.Limit.Rate > 0 {
		rate.Remaining = op.Limit.Burst - 1
	}
	rk := op.KeyID + "/" + op.ReplayKey
	if h.seen[rk] {
		return contract.OperationResult{Rate: rate}, contract.ErrReplayed
	}
	h.seen[rk] = true
	o := contract.Outcome{Action: op.Action, Code: op.Code, At: op.Now.UnixMilli()}
	c, ok := h.codes[op.ProjectID+"/"+op.Code]
	switch {
	case !ok:
		o.Error = contract.CodeNotFound
	case op.Action == contract.ActionVerify && c.VerifiedAtMs != 0:
		o.CodeID, o.Error, o.VerifiedAt = c.ID, contract.CodeAlreadyUsed, c.VerifiedAtMs
	case op.Action == contract.ActionVerify:
		c.VerifiedAtMs, c.VerifiedBy, c.Version = op.Now.UnixMilli(), op.By, c.Version+1
		o.CodeID, o.VerifiedAt = c.ID, c.VerifiedAtMs
	case c.VerifiedAtMs == 0:
		o.CodeID, o.Error = c.ID, contract.CodeAlreadyUnused
	default:
		c.VerifiedAtMs, c.VerifiedBy, c.Version = 0, "", c.Version+1
		o.CodeID = c.ID
	}
	return contract.OperationResult{Outcome: o, Rate: rate}, nil
}

func (h *fakeHot) Admit(_ context.Context, a contract.Admission) (contract.RateState, error) {
	h.mu.Lock()
	h.calls = append(h.calls, hotCall{Method: "Admit", Adm: a})
	hook := h.admit
	h.mu.Unlock()
	if hook != nil {
		return hook(a)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	rate := contract.RateState{Remaining: -1}
	if a.Limit.Rate > 0 {
		rate.Remaining = a.Limit.Burst - 1
	}
	if a.CheckReplay {
		rk := a.KeyID + "/" + a.ReplayKey
		if h.seen[rk] {
			return rate, contract.ErrReplayed
		}
		h.seen[rk] = true
	}
	return rate, nil
}

func (h *fakeHot) LiveCode(_ context.Context, projectID, value string) (contract.CodeRecord, bool, error) {
	h.mu.Lock()
	h.calls = append(h.calls, hotCall{Method: "LiveCode"})
	err := h.liveErr
	h.mu.Unlock()
	if err != nil {
		return contract.CodeRecord{}, false, err
	}
	c, ok := h.live(projectID, value)
	return c, ok, nil
}

// env is one adapter over fresh fakes.
type env struct {
	srv *httpapi.Server
	rec *fakeRecords
	hot *fakeHot
	log *testkit.SyncBuffer // the server's log output
}

func newEnv(t testing.TB) *env {
	t.Helper()
	exp := int64(now + 3600)
	rec := &fakeRecords{
		keys: map[string]contract.APIKey{},
		projects: map[string]contract.Project{
			projectA: {ID: projectA, Name: "Shop", Description: "Spring sale", Status: true, ExpiresAt: &exp, CreatedAt: now - 86400},
			projectB: {ID: projectB, Name: "Other", Status: true, CreatedAt: now - 86400},
		},
		stats: map[string]contract.Statistics{
			projectA: {TotalCodes: 10, UsedCodes: 3, UnusedCodes: 5, DisabledCodes: 1, ExpiredCodes: 1},
		},
		logs: map[string][]contract.LogEntry{},
	}
	for _, k := range []contract.APIKey{keyA, keyB, keyRevoked, keyDisabled, keyLimited} {
		rec.keys[k.ID] = k
	}
	e := &env{rec: rec, hot: newFakeHot(), log: &testkit.SyncBuffer{}}
	e.reconfigure(t, nil)
	return e
}

// reconfigure replaces the server with one whose config edit changed; the fakes stay.
func (e *env) reconfigure(t testing.TB, edit func(*httpapi.Config)) {
	t.Helper()
	cfg := httpapi.Config{
		Records: e.rec,
		HotPath: e.hot,
		Logger:  slog.New(slog.NewTextHandler(e.log, nil)),
	}
	if edit != nil {
		edit(&cfg)
	}
	srv, err := httpapi.NewWithClock(cfg, func() time.Time { return fixedNow }, func() string { return eventID })
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv
}

// addCode stores a code in the records and its live state in the hot path.
func (e *env) addCode(c contract.CodeRecord) {
	e.rec.mu.Lock()
	e.rec.codes = append(e.rec.codes, c)
	e.rec.mu.Unlock()
	e.hot.put(c)
}

// req is one request to send; the zero value of each field picks the usual.
type req struct {
	method string
	path   string
	query  string // raw, as sent
	body   []byte
	key    *contract.APIKey // signs the request; keyA when nil
	ts     string           // X-Timestamp; now when ""
	nonce  string           // X-Nonce; none when ""
	sig    string           // X-Signature; the correct one when ""
	// header overrides headers after signing: a key with an empty value is sent empty.
	header map[string]string
	// drop removes headers after signing.
	drop    []string
	chunked bool
}

// build signs r as the contract says and returns the request.
func (r req) build() *http.Request {
	key := keyA
	if r.key != nil {
		key = *r.key
	}
	if r.method == "" {
		r.method = http.MethodGet
	}
	if r.ts == "" {
		r.ts = strconv.FormatInt(now, 10)
	}
	target := r.path
	if r.query != "" {
		target += "?" + r.query
	}
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	hr := httptest.NewRequest(r.method, target, body)
	if r.chunked {
		hr.Body = io.NopCloser(bytes.NewReader(r.body))
		hr.ContentLength = -1
		hr.TransferEncoding = []string{"chunked"}
	}
	sig := r.sig
	if sig == "" {
		sig = contract.Sign(key.Secret, contract.StringToSign(r.method, r.path, r.query, contract.BodySHA256(r.body), r.ts, r.nonce))
	}
	hr.Header.Set("X-API-Key", key.ID)
	hr.Header.Set("X-Timestamp", r.ts)
	hr.Header.Set("X-Signature", sig)
	if r.nonce != "" {
		hr.Header.Set("X-Nonce", r.nonce)
	}
	if r.body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	for _, k := range r.drop {
		hr.Header.Del(k)
	}
	return hr
}

func (e *env) do(r req) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	e.srv.ServeHTTP(w, r.build())
	return w
}

var nonceSeq struct {
	sync.Mutex
	n int
}

// newNonce returns a fresh X-Nonce of the contract's form.
func newNonce() string {
	nonceSeq.Lock()
	defer nonceSeq.Unlock()
	nonceSeq.n++
	return "test-nonce-" + strconv.Itoa(100000+nonceSeq.n)
}

// wantDetail checks a refusal: the status, a body that is exactly one JSON object whose only
// field is "detail", a detail that reads as a sentence and contains mention.
func wantDetail(t testing.TB, w *httptest.ResponseRecorder, status int, mention string) string {
	t.Helper()
	if w.Code != status {
		t.Fatalf("status %d, want %d; body %s", w.Code, status, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	dec := json.NewDecoder(bytes.NewReader(w.Body.Bytes()))
	var m map[string]json.RawMessage
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, w.Body)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("body holds more than one JSON value: %s", w.Body)
	}
	if len(m) != 1 || m["detail"] == nil {
		t.Fatalf("body must hold exactly the field detail: %s", w.Body)
	}
	var detail string
	if err := json.Unmarshal(m["detail"], &detail); err != nil {
		t.Fatalf("detail is not a string: %s", w.Body)
	}
	if !isSentence(detail) {
		t.Errorf("detail %q is not an English sentence", detail)
	}
	if !strings.Contains(detail, mention) {
		t.Errorf("detail %q does not mention %q", detail, mention)
	}
	return detail
}

// isSentence: words that start with a letter, no control characters, nothing of Go's
// formatting or error wrapping showing through.
func isSentence(s string) bool {
	if s == "" || !unicode.IsLetter([]rune(s)[0]) || !strings.Contains(s, " ") {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return !strings.Contains(s, "%!") && !strings.HasSuffix(s, ":") && !strings.Contains(s, "<nil>")
}

// wantNoOperation checks that the hot path neither verified, reactivated nor admitted anything:
// no state changed, no nonce spent, no token taken.
func wantNoOperation(t testing.TB, e *env) {
	t.Helper()
	if calls := e.hot.Calls("Verify", "Reactivate", "Admit"); len(calls) != 0 {
		t.Errorf("the refused request reached the hot path: %+v", calls)
	}
}

// wantNoRead checks that the records answered no read other than the key's lookup.
func wantNoRead(t testing.TB, e *env) {
	t.Helper()
	for _, c := range e.rec.Calls() {
		if c != "APIKey" {
			t.Errorf("the refused request read the records: %v", e.rec.Calls())
			return
		}
	}
}

func decode[T any](t testing.TB, w *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	if w.Code != http.StatusOK {
		t.Fatalf("status %d, want 200; body %s", w.Code, w.Body)
	}
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
		t.Fatalf("decode %s: %v", w.Body, err)
	}
	return v
}
