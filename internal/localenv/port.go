package localenv

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// FreePort returns a loopback TCP port that nothing listens on and that no other caller of
// FreePort on this machine holds, for a server that will bind it later (Redis, PostgreSQL,
// Kafka, an acv process): the port is named in a configuration before its server starts.
//
// Asking the kernel for a port (binding :0, then closing) is not enough for that: the port
// is free only at that instant, and the kernel hands the same numbers out as the local ports
// of outgoing connections, so a connection opened meanwhile by any process (a test's client,
// a Kafka broker) may take it before the server binds ("address already in use"). FreePort
// therefore picks outside the kernel's ephemeral range (ip_local_port_range), where no
// connection is given a port, and reserves the port across processes: a file under
// os.TempDir()/acv-ports names the reserving process, and the reservation lasts as long as
// that process lives (callers that share os.TempDir() and see each other's process ids, as
// the tests and benchmarks of one machine do). Where the ephemeral range leaves no room, or
// the reservations cannot be written, it falls back to asking the kernel.
func FreePort() (int, error) {
	lo, hi, ok := reservableRange()
	if !ok {
		return kernelPort()
	}
	port, err := reservePort(filepath.Join(os.TempDir(), "acv-ports"), lo, hi)
	if err != nil {
		return kernelPort()
	}
	return port, nil
}

// kernelPort asks the kernel for a free loopback TCP port.
func kernelPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// reservableRange is the larger of the port ranges below and above the kernel's ephemeral
// range, above 10000 (the ports below are where servers listen by default, a developer's own
// Redis or PostgreSQL among them). ok is false when it holds fewer than 1000 ports.
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

// ephemeralRange is the range of local ports the kernel gives outgoing connections
// (ip_local_port_range); ok is false when it cannot be read.
func ephemeralRange() (lo, hi int, ok bool) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0, false
	}
	lo, err1 := strconv.Atoi(f[0])
	hi, err2 := strconv.Atoi(f[1])
	return lo, hi, err1 == nil && err2 == nil
}

// reservePort reserves a port of [lo, hi] that nothing listens on, recording the reservation
// as dir/<port> holding this process's identity. A reservation whose process is gone (or whose
// id now names another process) is taken over. The choice and the write happen under a lock
// on dir/.lock, so two pickers, in one process or several, never take the same port.
func reservePort(dir string, lo, hi int) (int, error) {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return 0, fmt.Errorf("reserve port: %w", err)
	}
	_ = os.Chmod(dir, 0o777|os.ModeSticky) // shared by every user's runs, as /tmp is
	unlock, err := lockFile(filepath.Join(dir, ".lock"))
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
		// Written aside and renamed in, so a reader never sees a partial identity. A stale
		// reservation another user's run left (the sticky directory keeps it theirs) cannot be
		// replaced: the port is skipped.
		tmp := path + "." + strconv.Itoa(os.Getpid())
		if err := os.WriteFile(tmp, []byte(me+"\n"), 0o644); err != nil {
			_ = os.Remove(tmp)
			lastErr = err
			continue
		}
		if err := os.Rename(tmp, path); err != nil {
			_ = os.Remove(tmp)
			lastErr = err
			continue
		}
		return port, nil
	}
	if lastErr != nil {
		return 0, fmt.Errorf("reserve port in %d-%d: %w", lo, hi, lastErr)
	}
	return 0, fmt.Errorf("reserve port: every port of %d-%d is in use or reserved", lo, hi)
}

// held reports whether the reservation file path names a process that still lives.
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

// processIdentity is "pid starttime": the start time (in clock ticks since boot, from
// /proc/pid/stat) tells a process from a later one given the same id.
func processIdentity(pid int) (string, error) {
	f, ok := runningStat(pid)
	if !ok {
		return "", fmt.Errorf("process %d is not running", pid)
	}
	// f starts at the state, field 3; starttime is field 22.
	if len(f) < 20 {
		return "", fmt.Errorf("read process %d: malformed stat", pid)
	}
	return strconv.Itoa(pid) + " " + f[19], nil
}

// bindable reports whether a listener can bind the loopback port now.
func bindable(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// lockFile takes an exclusive flock on path, waiting for it, and returns its release.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o666)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	_ = f.Chmod(0o666) // whatever the creator's umask, other users' runs open it too
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// waitTCP waits until addr accepts connections or the deadline passes.
func waitTCP(addr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not reachable after %s: %w", addr, within, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
