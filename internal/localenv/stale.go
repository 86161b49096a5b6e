package localenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// LockDir takes an exclusive lock on the data directory dir (flock on dir/.lock) for as long as
// the process lives, or until release is called. It fails at once when another process holds
// it. The kernel drops the lock when the process dies, however it dies (kill -9 included), so
// a holder of the lock knows that any server still running on dir's data was left behind by a
// run that died, and may stop it (StartRedis and StartPostgres do).
func LockDir(dir string) (release func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, ".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s is in use by another process (%s is locked)", dir, path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// stopStale stops a server that a previous run left behind on a data directory: the process
// whose id the first line of pidFile holds, when it is still alive and runs the executable
// named exe. It is asked to end with sig and killed after grace. A missing or stale pid file
// is not an error. Callers own the directory (see LockDir), so such a process is an orphan of
// a run that died, never a server someone still uses.
func stopStale(pidFile, exe string, sig syscall.Signal, grace time.Duration) error {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return nil
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 1 || pid == os.Getpid() || !alive(pid) || !runs(pid, exe) {
		return nil
	}
	if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop stale %s (pid %d, %s): %w", exe, pid, pidFile, err)
	}
	deadline := time.Now().Add(grace)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			deadline = time.Now().Add(grace)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// alive tells whether pid is a running process (a zombie is not).
func alive(pid int) bool {
	_, ok := runningStat(pid)
	return ok
}

// runningStat is the fields of /proc/pid/stat after the command (the state, field 3, first),
// and whether pid is a running process (a zombie is not).
func runningStat(pid int) ([]string, bool) {
	f, ok := StatFields("/proc/" + strconv.Itoa(pid) + "/stat")
	if !ok || f[0] == "Z" || f[0] == "X" {
		return nil, false
	}
	return f, true
}

// runs tells whether pid runs the program named exe: by its executable, its command name or
// its first argument (Debian's redis-server is a link to redis-check-rdb, which picks its role
// by the name it was called with).
func runs(pid int, exe string) bool {
	proc := "/proc/" + strconv.Itoa(pid)
	if p, err := os.Readlink(proc + "/exe"); err == nil && filepath.Base(strings.TrimSuffix(p, " (deleted)")) == exe {
		return true
	}
	if b, err := os.ReadFile(proc + "/comm"); err == nil && strings.TrimSpace(string(b)) == exe {
		return true
	}
	b, err := os.ReadFile(proc + "/cmdline")
	if err != nil {
		return false
	}
	arg0, _, _ := strings.Cut(string(b), "\x00")
	arg0, _, _ = strings.Cut(arg0, " ")
	return filepath.Base(arg0) == exe
}

// redisPidFile is where StartRedis has redis-server write its pid. A redis-server still running
// from a run that died (kill -9) would append to the same AOF as the new one: it is stopped
// first, with SIGTERM, which makes it fsync its AOF before it exits.
func redisPidFile(dir string) (string, error) {
	pidFile := filepath.Join(dir, "redis.pid")
	return pidFile, stopStale(pidFile, "redis-server", syscall.SIGTERM, 10*time.Second)
}

// stopStalePostgres stops a postmaster still running from a run that died on data directory
// dir (its postmaster.pid names it), with a fast shutdown (SIGINT).
func stopStalePostgres(dir string) error {
	return stopStale(filepath.Join(dir, "postmaster.pid"), "postgres", syscall.SIGINT, 20*time.Second)
}

// staleStart tells whether postgres refused to start because of what a server of a run that
// died left behind: its backends still attached to the shared memory, or its lock file while
// it was stopping. Both clear within seconds, so the start is tried again.
func staleStart(output string) bool {
	return strings.Contains(output, "pre-existing shared memory block") ||
		strings.Contains(output, `lock file "postmaster.pid" already exists`)
}
