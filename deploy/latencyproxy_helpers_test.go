package deploy_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// LatencyProxy is a loopback TCP proxy in front of one server that holds every byte it
// forwards, either way, for a delay the test may change at any time: a slow link to a
// dependency that keeps answering. It adds latency without limiting throughput.
type LatencyProxy struct {
	// Addr is where clients connect instead of the server ("127.0.0.1:port").
	Addr string

	target string
	ln     net.Listener
	delay  atomic.Int64 // one way, in nanoseconds
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// StartLatencyProxy listens on a free loopback port and forwards every connection to target,
// with no delay until SetDelay. It is closed, every connection with it, when tb ends.
func StartLatencyProxy(tb testing.TB, target string) *LatencyProxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("latency proxy: %v", err)
	}
	p := &LatencyProxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go p.serve(c)
		}
	}()
	tb.Cleanup(p.Close)
	return p
}

// SetDelay sets how long each chunk read from either side is held before it is written on (a
// round trip takes twice d longer), for the chunks read from then on.
func (p *LatencyProxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// Close stops listening, cuts every connection and waits for the forwarding to end. It is safe
// to call more than once.
func (p *LatencyProxy) Close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		p.ln.Close()
		for c := range p.conns {
			c.Close()
		}
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// track adds cs to the open connections, or closes them and returns false once the proxy
// closed; untrack closes and forgets them.
func (p *LatencyProxy) track(untrack bool, cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		if untrack || p.closed {
			delete(p.conns, c)
			c.Close()
		} else {
			p.conns[c] = struct{}{}
		}
	}
	return !untrack && !p.closed
}

func (p *LatencyProxy) serve(client net.Conn) {
	defer p.wg.Done()
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		client.Close()
		return
	}
	if !p.track(false, client, server) {
		return
	}
	var both sync.WaitGroup
	both.Add(2)
	go func() { defer both.Done(); p.forward(server, client) }()
	go func() { defer both.Done(); p.forward(client, server) }()
	both.Wait()
	p.track(true, client, server)
}

// heldChunk is what one read returned, and when it may be written on.
type heldChunk struct {
	b   []byte
	due time.Time
}

// forward copies src to dst, each chunk held for the delay current when it was read. When src
// ends, dst's writing side is closed (EOF, as without the proxy); when dst fails, src is closed.
func (p *LatencyProxy) forward(dst, src net.Conn) {
	chunks := make(chan heldChunk, 64)
	go func() {
		defer close(chunks)
		for {
			b := make([]byte, 32<<10)
			n, err := src.Read(b)
			if n > 0 {
				chunks <- heldChunk{b: b[:n], due: time.Now().Add(time.Duration(p.delay.Load()))}
			}
			if err != nil {
				return
			}
		}
	}()
	failed := false
	for c := range chunks {
		if failed {
			continue
		}
		if wait := time.Until(c.due); wait > 0 {
			time.Sleep(wait)
		}
		if _, err := dst.Write(c.b); err != nil {
			failed = true
			src.Close()
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok && !failed {
		_ = tc.CloseWrite()
		return
	}
	dst.Close()
}

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

	p := StartLatencyProxy(t, ln.Addr().String())
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
