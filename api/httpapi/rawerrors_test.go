package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// serveTCP runs e's server on a loopback port, as `acv serve` does, until the test ends.
func serveTCP(t *testing.T, e *env) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// net/http lingers up to half a second on a connection it refused with 431 before closing it.
	go func() { done <- e.srv.Serve(ctx, ln, 15*time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// rawExchange sends raw on a new TCP connection and reads n answers off it.
func rawExchange(t *testing.T, addr, raw string, n int) []*http.Response {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	go func() { _, _ = io.WriteString(c, raw) }()
	br := bufio.NewReader(c)
	var out []*http.Response
	for i := 0; i < n; i++ {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("read answer %d to %q: %v", i+1, abbreviate(raw), err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("read body of answer %d to %q: %v", i+1, abbreviate(raw), err)
		}
		resp.Body = io.NopCloser(strings.NewReader(string(body)))
		out = append(out, resp)
	}
	return out
}

func abbreviate(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

// wantJSONError checks an answer read off the wire: the status, a JSON body that is exactly
// {"detail": sentence}, and a detail that mentions mention.
func wantJSONError(t *testing.T, resp *http.Response, status int, mention string) {
	t.Helper()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d; body %q", resp.StatusCode, status, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q, want application/json; body %q", ct, body)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %q", err, body)
	}
	detail, ok := m["detail"].(string)
	if len(m) != 1 || !ok {
		t.Fatalf("body must hold exactly the string field detail: %q", body)
	}
	if !isSentence(detail) {
		t.Errorf("detail %q is not an English sentence", detail)
	}
	if !strings.Contains(detail, mention) {
		t.Errorf("detail %q does not mention %q", detail, mention)
	}
}

// TestGoRefusalsAreJSON: requests net/http refuses before any handler runs (it cannot parse
// them, their headers are too large, their Transfer-Encoding, HTTP version or Expect is not
// served) are answered with their status and the contract's {"detail"} body, not net/http's
// plain text. Sent over TCP as raw bytes, since no well-behaved client can send them.
func TestGoRefusalsAreJSON(t *testing.T) {
	e := newEnv(t)
	addr := serveTCP(t, e)
	for _, tc := range []struct {
		name, raw string
		status    int
		mention   string
	}{
		{"garbage request line", "GARBAGE\r\n\r\n", 400, "not valid HTTP"},
		{"request line without a version", "GET /healthz\r\n\r\n", 400, "not valid HTTP"},
		{"request line with a bad version", "GET /healthz HTTP/one\r\nHost: x\r\n\r\n", 400, "not valid HTTP"},
		{"header line without a colon", "GET /healthz HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n", 400, "not valid HTTP"},
		{"header name with a space", "GET /healthz HTTP/1.1\r\nHost: x\r\nX Bad: v\r\n\r\n", 400, "header name"},
		{"header name with a control character", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-B\x01d: v\r\n\r\n", 400, ""},
		{"header value with a control character", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Bad: a\x01b\r\n\r\n", 400, ""},
		{"HTTP/1.1 without Host", "GET /healthz HTTP/1.1\r\nUser-Agent: raw\r\n\r\n", 400, "Host header is missing"},
		{"malformed Host", "GET /healthz HTTP/1.1\r\nHost: a b\r\n\r\n", 400, "Host header is malformed"},
		{"two differing Content-Lengths", "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400, "not valid HTTP"},
		{"Content-Length not a number", "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: ten\r\n\r\n", 400, "not valid HTTP"},
		{"headers over the limit", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 40<<10) + "\r\n\r\n", 431, "32 KiB"},
		{"many headers over the limit", "GET /healthz HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-Many: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n", 1000) + "\r\n", 431, "32 KiB"},
		{"unknown Transfer-Encoding", "POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "Transfer-Encoding"},
		{"HTTP/2.0 request line", "GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n", 505, "HTTP/1.1"},
		{"unknown Expect", "POST /healthz HTTP/1.1\r\nHost: x\r\nExpect: bogus\r\nContent-Length: 3\r\n\r\nabc", 417, "100-continue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantJSONError(t, rawExchange(t, addr, tc.raw, 1)[0], tc.status, tc.mention)
		})
	}

	t.Run("after an answered request on the same connection", func(t *testing.T) {
		rs := rawExchange(t, addr, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /nothing HTTP/1.1\r\nHost: x\r\n\r\nGARBAGE\r\n\r\n", 3)
		if body, _ := io.ReadAll(rs[0].Body); rs[0].StatusCode != 200 || string(body) != `{"status":"ok"}` {
			t.Fatalf("healthz: %d %q", rs[0].StatusCode, body)
		}
		wantJSONError(t, rs[1], 404, "Not found")
		wantJSONError(t, rs[2], 400, "not valid HTTP")
	})
	t.Run("headers just under the limit are served", func(t *testing.T) {
		r := rawExchange(t, addr, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("a", 30<<10)+"\r\n\r\n", 1)[0]
		if r.StatusCode != 200 {
			t.Fatalf("status %d", r.StatusCode)
		}
	})
	t.Run("HTTP/1.0 without Host is served", func(t *testing.T) {
		r := rawExchange(t, addr, "GET /healthz HTTP/1.0\r\n\r\n", 1)[0]
		if r.StatusCode != 200 {
			t.Fatalf("status %d", r.StatusCode)
		}
	})
}
