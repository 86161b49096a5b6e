package httpapi

import (
	"fmt"
	"net"
	"sync/atomic"
	"time"
)

// responseWriteTimeout bounds how long one response may take to reach the client once its first
// byte goes out: a client that stops reading loses its connection.
//
// net/http's Server.WriteTimeout is not used for this, because its clock starts when the request
// has been read, not when the answer is ready. On a busy machine a handler can be scheduled late
// (the request's context deadline has passed, but its goroutine has not run yet), and when the
// answer is finally written past that deadline, net/http closes the connection without a word:
// the client sees EOF instead of its 200 or 503, and a verify that redeemed the code is never
// told. The request's work is bounded by RequestTimeout (its context) instead, and the write by
// this budget, which starts only when there is something to write.
const responseWriteTimeout = 10 * time.Second

// writeDeadlineListener hands out connections whose write deadline starts with each response.
type writeDeadlineListener struct {
	net.Listener
	budget time.Duration
}

func (l writeDeadlineListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &writeDeadlineConn{Conn: c, budget: l.budget}, nil
}

// writeDeadlineConn sets the write deadline at the first write after a read: a response starts
// to go out after its request was read, so each response gets the whole budget from its first
// byte. net/http clears the deadline once the response is done.
type writeDeadlineConn struct {
	net.Conn
	budget time.Duration
	// answering is set by the first write of a response and cleared by reading: the next write
	// starts the next response.
	answering atomic.Bool
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

// CloseWrite lets net/http half-close the connection after a 431 (see jsonErrorConn).
func (c *writeDeadlineConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
