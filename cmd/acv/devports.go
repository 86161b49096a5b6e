package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/acv/acv/internal/localenv"
)

// devPorts chooses the loopback addresses of acv dev's listeners and remembers them in the data
// directory (ports.json), so a restart serves on the same address whenever it is free: a
// bookmark, a dashboard or a Prometheus series keeps working. Each listener tries the address
// asked for, else its default and then the address last used, else a free port.
type devPorts struct {
	path  string
	addrs map[string]string
}

// loadDevPorts reads dir/ports.json; a missing or unreadable file remembers nothing.
func loadDevPorts(dir string) *devPorts {
	p := &devPorts{path: filepath.Join(dir, "ports.json"), addrs: map[string]string{}}
	if b, err := os.ReadFile(p.path); err == nil {
		_ = json.Unmarshal(b, &p.addrs)
	}
	return p
}

// candidates are the addresses to try for the listener name, in order: the one asked for, else
// the default and then the address it got last time.
func (p *devPorts) candidates(name, asked, def string) []string {
	tries := []string{cmp.Or(asked, def)}
	if r := p.addrs[name]; asked == "" && r != "" && r != def {
		tries = append(tries, r)
	}
	return tries
}

// listen opens the listener name on the first candidate address that is free, else on a free
// loopback port, and remembers the address it got. It binds each address once: a probe before
// the bind would leave a window for another process to take the port.
func (p *devPorts) listen(name, asked, def string) (net.Listener, error) {
	for _, addr := range p.candidates(name, asked, def) {
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			return ln, p.remember(name, ln.Addr().String())
		}
		slog.Warn("address busy; trying another", "listener", name, "addr", addr, "err", err)
	}
	addr, err := localenv.FreeAddr()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", name, err)
	}
	return ln, p.remember(name, ln.Addr().String())
}

// pick is listen for a server of another process (Prometheus), which binds the address itself:
// the first candidate nothing listens on now, else a free port (port 0 asks for one). The
// caller remembers it once the server serves on it.
func (p *devPorts) pick(name, asked, def string) (string, error) {
	for _, addr := range p.candidates(name, asked, def) {
		if host, port, err := net.SplitHostPort(addr); err == nil && port == "0" {
			free, err := localenv.FreePort()
			return net.JoinHostPort(cmp.Or(host, "127.0.0.1"), strconv.Itoa(free)), err
		}
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			ln.Close()
			return addr, nil
		}
		slog.Warn("address busy; trying another", "listener", name, "addr", addr, "err", err)
	}
	return localenv.FreeAddr()
}

func (p *devPorts) remember(name, addr string) error {
	if p.addrs[name] == addr {
		return nil
	}
	p.addrs[name] = addr
	b, _ := json.MarshalIndent(p.addrs, "", "  ")
	if err := os.WriteFile(p.path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("remember the %s address: %w", name, err)
	}
	return nil
}
