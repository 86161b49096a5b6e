package testkit_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/acv/acv/internal/testkit"
)

// TestLatencyProxy checks that the proxy forwards both ways in order, adds the delay it is set
// to (twice per round trip) and none otherwise, and passes the server's close on.
func TestLatencyProxy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c) // echo until the client closes
			}()
		}
	}()

	p := testkit.StartLatencyProxy(t, ln.Addr().String())
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	roundTrip := func(i int) time.Duration {
		t.Helper()
		start := time.Now()
		if _, err := fmt.Fprintf(c, "ping %d\n", i); err != nil {
			t.Fatal(err)
		}
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("ping %d\n", i); line != want {
			t.Fatalf("got %q, want %q", line, want)
		}
		return time.Since(start)
	}

	// Bounds far apart, so that a busy machine does not blur them: 200 ms added to a round
	// trip, serial delays would add 2 s to ten pipelined ones.
	const delay = 100 * time.Millisecond
	if d := roundTrip(0); d > delay {
		t.Errorf("round trip without delay took %s", d)
	}
	p.SetDelay(delay)
	if d := roundTrip(1); d < 2*delay {
		t.Errorf("round trip with a %s delay each way took %s, want at least %s", delay, d, 2*delay)
	}
	// Pipelined requests are held together, not one delay after another.
	start := time.Now()
	for i := 2; i < 12; i++ {
		if _, err := fmt.Fprintf(c, "ping %d\n", i); err != nil {
			t.Fatal(err)
		}
	}
	for i := 2; i < 12; i++ {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("ping %d\n", i); line != want {
			t.Fatalf("got %q, want %q", line, want)
		}
	}
	if d := time.Since(start); d < 2*delay || d > 10*delay {
		t.Errorf("10 pipelined round trips with a %s delay each way took %s, want about %s", delay, d, 2*delay)
	}
	p.SetDelay(0)
	if d := roundTrip(12); d > delay {
		t.Errorf("round trip after the delay was lifted took %s", d)
	}

	// The client's close reaches the server, whose close comes back as EOF.
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadString('\n'); err != io.EOF {
		t.Errorf("after closing: %v, want EOF", err)
	}
}
