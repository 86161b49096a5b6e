package httpapi

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// The write budget runs from a response's first byte, not from its request: a response written
// long after its request was read goes out, and a client that stops reading still loses the
// connection within the budget.
func TestWriteDeadlineStartsWithResponse(t *testing.T) {
	const budget = 100 * time.Millisecond
	server, client := net.Pipe()
	defer client.Close()
	c := &writeDeadlineConn{Conn: server, budget: budget}
	defer c.Close()

	exchange := func(request string) {
		t.Helper()
		go func() { _, _ = io.WriteString(client, request) }()
		buf := make([]byte, len(request))
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatalf("read request: %v", err)
		}
	}

	exchange("first")
	time.Sleep(3 * budget) // the handler takes longer than the budget
	got := make(chan error, 1)
	go func() {
		_, err := io.ReadFull(client, make([]byte, 2))
		got <- err
	}()
	if _, err := c.Write([]byte("ok")); err != nil {
		t.Fatalf("a response written %v after its request: %v", 3*budget, err)
	}
	if err := <-got; err != nil {
		t.Fatalf("client read: %v", err)
	}

	exchange("second")
	start := time.Now()
	_, err := c.Write([]byte("nobody reads this"))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write to a client that does not read: %v, want a deadline error", err)
	}
	if d := time.Since(start); d < budget || d > 20*budget {
		t.Fatalf("the unread write failed after %v, want about %v", d, budget)
	}
}
