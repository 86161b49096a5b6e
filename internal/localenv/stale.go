package localenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// LockDir locks the data directory dir (flock on dir/.lock) until release or the process's
// death; it fails at once when another process holds it. A server still running on dir's data
// is then one a dead run left, which may be stopped (StartRedis and StartPostgres do).
func LockDir(dir string) (release func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	release, err = lockFile(context.Background(), filepath.Join(dir, ".lock"), 0o600, 0)
	if err != nil {
		return nil, fmt.Errorf("%s is in use: %w", dir, err)
	}
	return release, nil
}

// stopStale stops the server a dead run left: the process named in pidFile, when it runs exe,
// with sig, then SIGKILL after grace. The caller owns the directory (LockDir).
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
	gone := func() error {
		if alive(pid) {
			return errors.New("alive")
		}
		return nil
	}
	if Poll(context.Background(), grace, 50*time.Millisecond, gone) != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		return Poll(context.Background(), grace, 50*time.Millisecond, gone)
	}
	return nil
}

// StatFields gives the fields of a /proc stat file after the command name (which may hold
// spaces and parentheses), the state (field 3) first: field n is at index n-3.
func StatFields(path string) (fields []string, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, false
	}
	f := strings.Fields(s[i+1:])
	return f, len(f) > 0
}

// runningStat is StatFields of pid's stat, ok only for a running process (not a zombie).
func runningStat(pid int) ([]string, bool) {
	f, ok := StatFields("/proc/" + strconv.Itoa(pid) + "/stat")
	if !ok || f[0] == "Z" || f[0] == "X" {
		return nil, false
	}
	return f, true
}

func alive(pid int) bool {
	_, ok := runningStat(pid)
	return ok
}

// runs tells whether pid runs the program exe, by its executable, command name or first
// argument (Debian's redis-server is a link to redis-check-rdb, which goes by its name).
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
