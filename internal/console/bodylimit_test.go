package console_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/acv/acv/internal/console"
)

// countingBody is a request body of size bytes, made as it is read, that counts what the
// server read of it.
type countingBody struct {
	r    io.Reader
	read atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.read.Add(int64(n))
	return n, err
}

// fill is an endless run of 'x'.
type fill struct{}

func (fill) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// bigUpload is a multipart form of about size bytes: one CSV file field.
func bigUpload(size int64) (*countingBody, string) {
	const boundary = "acv-test-boundary"
	head := "--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"codes.csv\"\r\n" +
		"Content-Type: text/csv\r\n\r\n"
	tail := "\r\n--" + boundary + "--\r\n"
	r := io.MultiReader(strings.NewReader(head), io.LimitReader(fill{}, size), strings.NewReader(tail))
	return &countingBody{r: r}, "multipart/form-data; boundary=" + boundary
}

// serve sends one request straight to the console's handler, so what the handler read of the
// body is all that was read of it.
func serve(e *env, method, path, ctype string, body io.Reader, cookie string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, body)
	req.Header.Set("Content-Type", ctype)
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: console.CookieName, Value: cookie})
	}
	rec := httptest.NewRecorder()
	e.srv.ServeHTTP(rec, req)
	return rec
}

// TestConsoleBodyReadOnlyAfterSession: a 60 MiB upload to the import page or the import API
// without a session, or from a session whose role may not import, is refused without reading
// a byte of it; the login form reads no more than its few KiB.
func TestConsoleBodyReadOnlyAfterSession(t *testing.T) {
	e := newEnv(t, nil)
	viewer := e.account("vera", console.RoleViewer)
	const size = 60 << 20
	for _, tc := range []struct {
		what, path, cookie string
		status             int
		maxRead            int64
	}{
		{"import page without a session", "/projects/00000000000000000000000000000000/import", "", http.StatusUnauthorized, 0},
		{"import API without a session", console.APIPrefix + "/projects/00000000000000000000000000000000/import", "", http.StatusUnauthorized, 0},
		{"import page as a viewer", "/projects/00000000000000000000000000000000/import", viewer.cookie, http.StatusForbidden, 0},
		{"import API as a viewer", console.APIPrefix + "/projects/00000000000000000000000000000000/import", viewer.cookie, http.StatusForbidden, 0},
		{"login page", "/login", "", http.StatusRequestEntityTooLarge, 8 << 10},
	} {
		body, ctype := bigUpload(size)
		rec := serve(e, "POST", tc.path, ctype, body, tc.cookie)
		if rec.Code != tc.status {
			t.Errorf("%s: status %d, want %d: %.300s", tc.what, rec.Code, tc.status, rec.Body)
		}
		if n := body.read.Load(); n > tc.maxRead {
			t.Errorf("%s: %d bytes of the body read before the answer, want at most %d", tc.what, n, tc.maxRead)
		}
	}
}

// TestConsoleLoginBodyLimit: a login over its few KiB, as a form or as JSON, is a 413 whose
// detail names the limit, not a wrong password.
func TestConsoleLoginBodyLimit(t *testing.T) {
	e := newEnv(t, nil)
	acc := e.bootstrap("walt", console.RoleViewer)
	long := strings.Repeat("p", 16<<10)

	form := url.Values{"username": {"walt"}, "password": {long}}.Encode()
	rec := serve(e, "POST", "/login", "application/x-www-form-urlencoded", strings.NewReader(form), "")
	if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), "at most 4096 bytes") {
		t.Errorf("login form over the limit: %d %.400s", rec.Code, rec.Body)
	}

	j, _ := json.Marshal(map[string]string{"username": "walt", "password": long})
	res, body := e.client().do("POST", "/session", j)
	expect(t, "login JSON over the limit", res, body, http.StatusRequestEntityTooLarge)
	if !strings.Contains(string(body), "at most 4096 bytes") {
		t.Errorf("detail should name the limit: %s", body)
	}

	// Within the limit both log in.
	ok := url.Values{"username": {"walt"}, "password": {acc.OneTimePassword}}.Encode()
	rec = serve(e, "POST", "/login", "application/x-www-form-urlencoded", strings.NewReader(ok), "")
	if rec.Code != http.StatusSeeOther {
		t.Errorf("login form: %d %.400s", rec.Code, rec.Body)
	}
	e.client().mustLogin("walt", acc.OneTimePassword)
}
