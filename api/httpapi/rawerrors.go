package httpapi

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/acv/acv/api/contract"
)

// net/http answers some requests before any handler sees them, with canned plain-text
// responses it writes straight on the connection: 400 for a request it cannot parse (a bad
// request line, an invalid header name or value, a missing or malformed Host), 431 for headers
// past MaxHeaderBytes, 501 for an unknown Transfer-Encoding, 505 for an HTTP version it does not
// serve, and 417 for an Expect other than 100-continue. The contract wants every error body to
// be {"detail": …}, and net/http has no hook for these, so jsonErrorListener's connections
// recognise each such response in the one Write that carries it and send the same status with
// a JSON body instead. The server test sends each kind of request over TCP, so a change of
// net/http's canned format fails it rather than going unnoticed.

// cannedHeaders follows the status line of every canned error net/http writes itself; no
// response of a handler has it (a handler's headers are sorted and carry a Date).
const cannedHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// expectationFailed is the status line of net/http's answer to an Expect it does not know; no
// handler of this server answers 417.
const expectationFailed = "HTTP/1.1 417 Expectation Failed\r\n"

// jsonErrorListener hands out connections whose canned net/http errors are rewritten as JSON.
type jsonErrorListener struct{ net.Listener }

func (l jsonErrorListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &jsonErrorConn{Conn: c}, nil
}

// jsonErrorConn rewrites net/http's canned error responses (see above) as they are written.
type jsonErrorConn struct{ net.Conn }

func (c *jsonErrorConn) Write(p []byte) (int, error) {
	if out, ok := rewriteCannedError(p); ok {
		if _, err := c.Conn.Write(out); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// CloseWrite lets net/http half-close the connection after a 431, as it does on a bare TCP
// connection, so the client reads the answer before the connection goes.
func (c *jsonErrorConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// rewriteCannedError returns the JSON form of p when p is one of net/http's canned error
// responses; ok is false for anything else, which is then written as it is.
func rewriteCannedError(p []byte) (out []byte, ok bool) {
	const proto = "HTTP/1.1 "
	// Every response starts so; only a 4xx or 5xx status is looked at further.
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
		switch {
		case strings.HasSuffix(body, "missing required Host header"):
			return "The Host header is missing"
		case strings.HasSuffix(body, "malformed Host header"):
			return "The Host header is malformed"
		case strings.HasSuffix(body, "invalid header name"):
			return "A header name holds characters HTTP does not allow"
		case strings.HasSuffix(body, "invalid header value"):
			return "A header value holds characters HTTP does not allow"
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
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 " + strconv.Itoa(code) + " " + http.StatusText(code) + "\r\n")
	b.WriteString("Content-Type: application/json; charset=utf-8\r\n")
	b.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n")
	b.WriteString("Connection: close\r\n\r\n")
	b.Write(body)
	return b.Bytes()
}
