package loadgen

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/acv/acv/api/contract"
)

// conn is one keep-alive HTTP/1.1 connection driven by hand, as wrk drives its connections: a
// request is written in one piece and the answer read by its Content-Length. Go's net/http
// client would spend more CPU than the server it measures.
type conn struct {
	addr string
	c    net.Conn
	r    *bufio.Reader
	req  []byte
	body []byte
}

func dial(addr string) (*conn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &conn{addr: addr, c: c, r: bufio.NewReaderSize(c, 16<<10)}, nil
}

func (c *conn) close() { c.c.Close() }

// signer builds signed verify requests; each worker has its own, so nothing is shared.
type signer struct {
	host, path, keyID, secret string
	nonce                     [16]byte
}

// verifyRequest renders a signed POST of body, with a fresh nonce and the current timestamp.
func (s *signer) verifyRequest(dst []byte, body []byte, now time.Time) []byte {
	_, _ = rand.Read(s.nonce[:])
	nonce := hex.EncodeToString(s.nonce[:])
	ts := strconv.FormatInt(now.Unix(), 10)
	sig := contract.Sign(s.secret, contract.StringToSign("POST", s.path, "", contract.BodySHA256(body), ts, nonce))
	dst = append(dst[:0], "POST "...)
	dst = append(dst, s.path...)
	dst = append(dst, " HTTP/1.1\r\nHost: "...)
	dst = append(dst, s.host...)
	dst = append(dst, "\r\nContent-Type: application/json\r\nContent-Length: "...)
	dst = strconv.AppendInt(dst, int64(len(body)), 10)
	dst = append(dst, "\r\nX-API-Key: "...)
	dst = append(dst, s.keyID...)
	dst = append(dst, "\r\nX-Timestamp: "...)
	dst = append(dst, ts...)
	dst = append(dst, "\r\nX-Nonce: "...)
	dst = append(dst, nonce...)
	dst = append(dst, "\r\nX-Signature: "...)
	dst = append(dst, sig...)
	dst = append(dst, "\r\n\r\n"...)
	return append(dst, body...)
}

var errChunked = errors.New("chunked answers are not supported")

// roundTrip writes req and reads one answer; the body stays valid until the next call.
func (c *conn) roundTrip(req []byte) (int, []byte, error) {
	if _, err := c.c.Write(req); err != nil {
		return 0, nil, err
	}
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return 0, nil, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, nil, fmt.Errorf("bad status line %q", line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, nil, fmt.Errorf("bad status line %q", line)
	}
	length := -1
	for {
		h, err := c.r.ReadSlice('\n')
		if err != nil {
			return 0, nil, err
		}
		if len(h) <= 2 {
			break
		}
		if name, value, ok := bytes.Cut(h, []byte(":")); ok {
			switch {
			case bytes.EqualFold(name, []byte("Content-Length")):
				length, err = strconv.Atoi(string(bytes.TrimSpace(value)))
				if err != nil {
					return 0, nil, fmt.Errorf("bad Content-Length %q", value)
				}
			case bytes.EqualFold(name, []byte("Transfer-Encoding")):
				return 0, nil, errChunked
			}
		}
	}
	if length < 0 {
		return 0, nil, errors.New("answer without Content-Length")
	}
	if cap(c.body) < length {
		c.body = make([]byte, length)
	}
	c.body = c.body[:length]
	if _, err := io.ReadFull(c.r, c.body); err != nil {
		return 0, nil, err
	}
	return status, c.body, nil
}
