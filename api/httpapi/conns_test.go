package httpapi_test

import (
	"context"
	"net"
	"testing"
	"time"
)

// A connection a client opened but never used does not hold the drain: Serve returns as soon
// as the requests in flight are done, not after net/http's five-second grace for new
// connections.
func TestShutdownClosesUnusedConnections(t *testing.T) {
	e := newEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.srv.Serve(ctx, ln, 10*time.Second) }()
	idle, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	time.Sleep(100 * time.Millisecond) // accepted, in net/http's StateNew
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("the drain took %v with only an unused connection open", d)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("the drain waited for a connection that never sent a request")
	}
}
