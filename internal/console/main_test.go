package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acv/acv/internal/admin"
	"github.com/acv/acv/internal/console"
	"github.com/acv/acv/internal/testkit"
	"github.com/acv/acv/store"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// cheap keeps argon2id fast in tests; TestConsolePasswordHash checks the production cost.
var cheap = console.PasswordParams{MemoryKiB: 1024, Time: 1, Threads: 1}

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// env is one console over real PostgreSQL and Redis, served on a real loopback listener.
type env struct {
	t     *testing.T
	url   string // database URL
	store *store.Store
	admin *admin.Admin
	clock *clock
	cfg   console.Config
	svc   *console.Service
	srv   *console.Server
	http  *httptest.Server
}

// newEnv starts a console; adjust changes its configuration before it is built.
func newEnv(t *testing.T, adjust func(*console.Config, *console.ServerConfig)) *env {
	t.Helper()
	a, url, _ := testkit.NewAdmin(t)
	st := a.Store.(*store.Store)
	e := &env{t: t, url: url, store: st, admin: a, clock: &clock{t: time.Now().Truncate(time.Second)}}
	e.cfg = console.Config{Store: st, Admin: a, HotPath: a.Cache.(console.HotPath), Now: e.clock.Now, Passwords: cheap}
	scfg := console.ServerConfig{}
	if adjust != nil {
		adjust(&e.cfg, &scfg)
	}
	e.svc, e.srv = e.build(scfg)
	e.http = httptest.NewServer(e.srv)
	t.Cleanup(e.http.Close)
	return e
}

// build makes a Service and Server over the env's configuration: a second one is another
// console instance (or the same after a restart) on the same database.
func (e *env) build(scfg console.ServerConfig) (*console.Service, *console.Server) {
	e.t.Helper()
	svc, err := console.NewService(e.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(svc.Close)
	srv, err := console.NewServer(svc, scfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return svc, srv
}

// bootstrap creates an account as `acv admin create` does and returns its one-time password.
func (e *env) bootstrap(username string, role console.Role) console.NewAccount {
	e.t.Helper()
	acc, err := e.svc.CreateAccount(context.Background(), console.SystemActor("cli:test"), username, role)
	if err != nil {
		e.t.Fatal(err)
	}
	return acc
}

// password is the password test accounts choose.
const password = "correct horse battery staple"

// account creates an account of role, logs it in, changes its one-time password and returns
// the logged-in client.
func (e *env) account(username string, role console.Role) *client {
	e.t.Helper()
	acc := e.bootstrap(username, role)
	c := e.client()
	c.mustLogin(username, acc.OneTimePassword)
	res, body := c.do("POST", "/me/password", map[string]string{"current_password": acc.OneTimePassword, "new_password": password})
	if res.StatusCode != http.StatusOK {
		e.t.Fatalf("change password of %s: %d %s", username, res.StatusCode, body)
	}
	c.adopt(res, body)
	return c
}

// client is a browser of the console: it keeps the session cookie and the CSRF token.
type client struct {
	t      *testing.T
	base   string
	cookie string
	csrf   string
	// header is added to every request.
	header http.Header
	// transport, when not nil, sends the requests (an OpenAPI check).
	transport http.RoundTripper
}

func (e *env) client() *client {
	return &client{t: e.t, base: e.http.URL + console.APIPrefix, header: http.Header{}}
}

// do sends a request; body, when not nil, is sent as JSON (a []byte or string as is). The
// CSRF token goes with every request once the client has one.
func (c *client) do(method, path string, body any) (*http.Response, []byte) {
	c.t.Helper()
	var rd io.Reader
	ctype := ""
	switch b := body.(type) {
	case nil:
	case string:
		rd, ctype = strings.NewReader(b), "application/json"
	case []byte:
		rd, ctype = bytes.NewReader(b), "application/json"
	default:
		j, err := json.Marshal(b)
		if err != nil {
			c.t.Fatal(err)
		}
		rd, ctype = bytes.NewReader(j), "application/json"
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if c.cookie != "" {
		req.AddCookie(&http.Cookie{Name: console.CookieName, Value: c.cookie})
	}
	if c.csrf != "" {
		req.Header.Set(console.CSRFHeader, c.csrf)
	}
	for k, vs := range c.header {
		req.Header[k] = vs
	}
	hc := http.DefaultClient
	if c.transport != nil {
		hc = &http.Client{Transport: c.transport}
	}
	res, err := hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return res, out
}

// adopt takes the session cookie and CSRF token of a login or password change.
func (c *client) adopt(res *http.Response, body []byte) {
	c.t.Helper()
	for _, ck := range res.Cookies() {
		if ck.Name == console.CookieName {
			c.cookie = ck.Value
		}
	}
	var b struct {
		CSRFToken string `json:"csrf_token"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		c.t.Fatalf("session body %s: %v", body, err)
	}
	c.csrf = b.CSRFToken
}

func (c *client) login(username, pw string) (*http.Response, []byte) {
	c.t.Helper()
	return c.do("POST", "/session", map[string]string{"username": username, "password": pw})
}

func (c *client) mustLogin(username, pw string) {
	c.t.Helper()
	res, body := c.login(username, pw)
	if res.StatusCode != http.StatusOK {
		c.t.Fatalf("login %s: %d %s", username, res.StatusCode, body)
	}
	c.adopt(res, body)
}

// expect checks a response's status and, for an error, that its body is {"detail": …}.
func expect(t *testing.T, what string, res *http.Response, body []byte, status int) {
	t.Helper()
	if res.StatusCode != status {
		t.Fatalf("%s: status %d, want %d: %s", what, res.StatusCode, status, body)
	}
	if status >= 400 {
		var e struct {
			Detail string `json:"detail"`
		}
		if err := json.Unmarshal(body, &e); err != nil || e.Detail == "" {
			t.Fatalf("%s: error body %q is not {\"detail\": …}", what, body)
		}
	}
}

// decode reads a JSON body into v.
func decode(t *testing.T, body []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
}

// startServer serves h on a loopback listener for the test and returns its base URL.
func startServer(t *testing.T, h http.Handler) string {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s.URL
}
