package console

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// proxies are the reverse proxies whose forwarding headers the console believes
// (ACV_ADMIN_TRUSTED_PROXIES). Only a request whose peer is one of them may name the client's
// address (X-Forwarded-For) or say it came over HTTPS (X-Forwarded-Proto): anyone else could
// write those headers, and the audit log's client IP and the cookie's Secure flag would lie.
type proxies []netip.Prefix

// parseProxies reads CIDRs or bare addresses.
func parseProxies(list []string) (proxies, error) {
	var ps proxies
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !strings.Contains(s, "/") {
			a, err := netip.ParseAddr(s)
			if err != nil {
				return nil, fmt.Errorf("trusted proxy %q: %w", s, err)
			}
			ps = append(ps, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: %w", s, err)
		}
		ps = append(ps, p.Masked())
	}
	return ps, nil
}

func (ps proxies) trusted(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// peer is the address of the connection's other end.
func peer(r *http.Request) (netip.Addr, bool) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	return a.Unmap(), err == nil
}

// clientIP is the address the request came from: the peer, or, when the peer is a trusted
// proxy, the nearest address in X-Forwarded-For that is not a trusted proxy (read from the
// right, since each proxy appends the address it saw; anything left of an untrusted address
// was written by the client and is ignored).
func (ps proxies) clientIP(r *http.Request) string {
	p, ok := peer(r)
	if !ok {
		return ""
	}
	if !ps.trusted(p) {
		return p.String()
	}
	client := p
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		client = a.Unmap()
		if !ps.trusted(client) {
			break
		}
	}
	return client.String()
}

// secure tells whether the browser reached the console over HTTPS: the connection itself is
// TLS, or a trusted proxy says so in X-Forwarded-Proto. The session cookie is Secure then.
func (ps proxies) secure(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	p, ok := peer(r)
	if !ok || !ps.trusted(p) {
		return false
	}
	proto, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
	return strings.EqualFold(strings.TrimSpace(proto), "https")
}
