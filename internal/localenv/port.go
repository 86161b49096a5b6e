package localenv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// FreePort returns a loopback TCP port that nothing listens on and no other caller of FreePort
// on this machine holds, for a server named in a configuration before it starts. A port from
// binding :0 may meanwhile become an outgoing connection's local port, so FreePort picks
// outside the kernel's ephemeral range and reserves the port, while its process lives, in a
// file under os.TempDir()/acv-ports; failing that, it asks the kernel.
func FreePort() (int, error) {
	if lo, hi, ok := reservableRange(); ok {
		if port, err := reservePort(filepath.Join(os.TempDir(), "acv-ports"), lo, hi); err == nil {
			return port, nil
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// FreeAddr is a loopback address "127.0.0.1:port" on a FreePort.
func FreeAddr() (string, error) {
	port, err := FreePort()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), err
}

// reservableRange is the larger of the ranges below and above the kernel's ephemeral range,
// from 10000 up (below are servers' default ports); ok is false when it holds fewer than 1000.
func reservableRange() (lo, hi int, ok bool) {
	elo, ehi, ok := ephemeralRange()
	if !ok {
		return 0, 0, false
	}
	const floor, top = 10000, 65535
	below, above := elo-floor, top-ehi
	switch {
	case below >= above && below >= 1000:
		return floor, elo - 1, true
	case above > below && above >= 1000:
		return ehi + 1, top, true
	}
	return 0, 0, false
}

func ephemeralRange() (lo, hi int, ok bool) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0, false
	}
	n, _ := fmt.Sscan(string(b), &lo, &hi)
	return lo, hi, n == 2
}

// reservePort reserves a free port of [lo, hi] as dir/<port> holding this process's identity,
// taking over reservations of dead processes, under a lock on dir/.lock.
func reservePort(dir string, lo, hi int) (int, error) {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return 0, fmt.Errorf("reserve port: %w", err)
	}
	_ = os.Chmod(dir, 0o777|os.ModeSticky) // shared by every user's runs, as /tmp is
	unlock, err := lockFile(context.Background(), filepath.Join(dir, ".lock"), 0o666, time.Minute)
	if err != nil {
		return 0, fmt.Errorf("reserve port: %w", err)
	}
	defer unlock()
	me, err := processIdentity(os.Getpid())
	if err != nil {
		return 0, fmt.Errorf("reserve port: %w", err)
	}
	var lastErr error
	n := hi - lo + 1
	start := rand.IntN(n)
	for i := range n {
		port := lo + (start+i)%n
		path := filepath.Join(dir, strconv.Itoa(port))
		if held(path) || !bindable(port) {
			continue
		}
		// Renamed in, so a reader never sees a partial identity. Another user's stale
		// reservation cannot be replaced (sticky directory): the port is skipped.
		tmp := path + "." + strconv.Itoa(os.Getpid())
		err := os.WriteFile(tmp, []byte(me+"\n"), 0o644)
		if err == nil {
			err = os.Rename(tmp, path)
		}
		if err == nil {
			return port, nil
		}
		_ = os.Remove(tmp)
		lastErr = err
	}
	if lastErr != nil {
		return 0, fmt.Errorf("reserve port in %d-%d: %w", lo, hi, lastErr)
	}
	return 0, fmt.Errorf("reserve port: every port of %d-%d is in use or reserved", lo, hi)
}

func held(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	owner := strings.TrimSpace(string(b))
	pid, err := strconv.Atoi(strings.SplitN(owner, " ", 2)[0])
	if err != nil {
		return false
	}
	now, err := processIdentity(pid)
	return err == nil && now == owner
}

func bindable(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}
