package httpapi

import (
	"net"
	"net/http"
	"sync"
)

// unusedConns tracks the connections that were accepted but have not sent a request yet. An
// HTTP client often opens such a connection when it has many requests at once and then parks it
// unused; net/http's Shutdown treats it as busy for five seconds, which would hold every drain
// for that long. At shutdown they carry no request, so they are closed at once.
type unusedConns struct {
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// track is an http.Server ConnState hook.
func (u *unusedConns) track(c net.Conn, st http.ConnState) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if st == http.StateNew {
		if u.conns == nil {
			u.conns = map[net.Conn]struct{}{}
		}
		u.conns[c] = struct{}{}
		return
	}
	delete(u.conns, c)
}

// closeAll closes every connection still waiting for its first request.
func (u *unusedConns) closeAll() {
	u.mu.Lock()
	defer u.mu.Unlock()
	for c := range u.conns {
		_ = c.Close()
		delete(u.conns, c)
	}
}

// onceCloseListener closes its listener once, so Serve's drain can stop accepting before it
// closes the unused connections while net/http's Shutdown closes it too.
type onceCloseListener struct {
	net.Listener
	once sync.Once
	err  error
}

func (l *onceCloseListener) Close() error {
	l.once.Do(func() { l.err = l.Listener.Close() })
	return l.err
}
