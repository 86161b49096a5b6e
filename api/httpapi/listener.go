package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acv/acv/api/contract"
)

// unusedConns tracks the connections accepted that have not sent a request yet: net/http's
// Shutdown treats one as busy for five seconds, so a drain closes them at once.
type unusedConns struct {
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func (u *unusedConns) track(c net.Conn, st http.ConnState) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if st == http.StateNew {
		u.conns[c] = struct{}{}
		return
	}
	delete(u.conns, c)
}

func (u *unusedConns) closeAll() {
	u.mu.Lock()
	defer u.mu.Unlock()
	for c := range u.conns {
		_ = c.Close()
		delete(u.conns, c)
	}
}

// listener hands out connections whose write deadline starts with each response and whose
// canned net/http errors are rewritten as JSON. It closes once, though Serve and Shutdown both
// close it.
type listener struct {
	net.Listener
	once sync.Once
	err  error
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &jsonErrorConn{Conn: &writeDeadlineConn{Conn: c, budget: responseWriteTimeout}}, nil
}

func (l *listener) Close() error {
	l.once.Do(func() { l.err = l.Listener.Close() })
	return l.err
}

// responseWriteTimeout bounds how long one response may take from its first byte. Not
// net/http's WriteTimeout: its clock starts when the request is read, so a handler scheduled
// late would have its answer (a redeemed code's 200) dropped by a silent close.
const responseWriteTimeout = 10 * time.Second

// writeDeadlineConn sets the write deadline at the first write after a read.
type writeDeadlineConn struct {
	net.Conn
	budget    time.Duration
	answering atomic.Bool // set by a response's first write, cleared by reading
}

func (c *writeDeadlineConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.answering.Store(false)
	}
	return n, err
}

func (c *writeDeadlineConn) Write(p []byte) (int, error) {
	if !c.answering.Swap(true) {
		if err := c.Conn.SetWriteDeadline(time.Now().Add(c.budget)); err != nil {
			return 0, fmt.Errorf("set write deadline: %w", err)
		}
	}
	return c.Conn.Write(p)
}

// CloseWrite lets net/http half-close the connection after a 431, so the client reads the answer.
func (c *writeDeadlineConn) CloseWrite() error { return closeWrite(c.Conn) }
func (c *jsonErrorConn) CloseWrite() error     { return closeWrite(c.Conn) }

func closeWrite(c net.Conn) error {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// jsonErrorConn rewrites net/http's canned plain-text error responses (400, 417, 431, 501,
// 505, written with no hook) in the one Write that carries each, as the same status with the
// contract's {"detail": …} body. The server test sends each kind over TCP, so a change of
// net/http's format fails it.
type jsonErrorConn struct{ net.Conn }

// cannedHeaders follows the status line of every canned error; no handler's response has it
// (a handler's headers are sorted and carry a Date). No handler answers 417 either.
const (
	cannedHeaders     = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
	expectationFailed = "HTTP/1.1 417 Expectation Failed\r\n"
)

func (c *jsonErrorConn) Write(p []byte) (int, error) {
	if out, ok := rewriteCannedError(p); ok {
		if _, err := c.Conn.Write(out); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// rewriteCannedError returns the JSON form of p when p is one of net/http's canned error
// responses; ok is false for anything else.
func rewriteCannedError(p []byte) (out []byte, ok bool) {
	const proto = "HTTP/1.1 "
	if len(p) < len(proto)+3 || !bytes.HasPrefix(p, []byte(proto)) || (p[len(proto)] != '4' && p[len(proto)] != '5') {
		return nil, false
	}
	code, err := strconv.Atoi(string(p[len(proto) : len(proto)+3]))
	if err != nil {
		return nil, false
	}
	if bytes.HasPrefix(p, []byte(expectationFailed)) {
		return errorResponse(code, "Only the Expect value 100-continue is supported"), true
	}
	end := bytes.Index(p, []byte("\r\n"))
	if end < 0 || !bytes.HasPrefix(p[end:], []byte(cannedHeaders)) {
		return nil, false
	}
	return errorResponse(code, cannedDetail(code, string(p[end+len(cannedHeaders):]))), true
}

// cannedDetail is the sentence for a canned error of status code whose plain-text body was body.
func cannedDetail(code int, body string) string {
	switch code {
	case http.StatusBadRequest:
		for _, d := range [...][2]string{{"missing required Host header", "The Host header is missing"},
			{"malformed Host header", "The Host header is malformed"},
			{"invalid header name", "A header name holds characters HTTP does not allow"},
			{"invalid header value", "A header value holds characters HTTP does not allow"}} {
			if strings.HasSuffix(body, d[0]) {
				return d[1]
			}
		}
		return "The request is not valid HTTP"
	case http.StatusRequestHeaderFieldsTooLarge:
		return "Request headers are larger than " + strconv.Itoa(maxHeaderBytes>>10) + " KiB"
	case http.StatusNotImplemented:
		return "The request's Transfer-Encoding is not supported"
	case http.StatusHTTPVersionNotSupported:
		return "Only HTTP/1.0 and HTTP/1.1 are served"
	}
	return "The request could not be read"
}

// errorResponse is a whole HTTP/1.1 response of status code with the contract's error body,
// closing the connection as net/http's canned answers do.
func errorResponse(code int, detail string) []byte {
	body, _ := json.Marshal(contract.ErrorBody{Detail: detail})
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		code, http.StatusText(code), len(body), body)
}
