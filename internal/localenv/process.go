package localenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is a server started by this package. It dies with its parent (Pdeathsig), so a
// crashed test binary leaves nothing running.
type Process struct {
	Name string
	cmd  *exec.Cmd
	out  *SyncBuffer
	done chan struct{}
}

// SyncBuffer is a bytes.Buffer that a process (or goroutine) may write while another reads it;
// with Max set, it starts over once it holds more than Max bytes.
type SyncBuffer struct {
	Max int
	mu  sync.Mutex
	b   bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Max > 0 && s.b.Len() > s.Max {
		s.b.Reset()
	}
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Launch starts cmd as a Process in a process group of its own that is killed with its parent;
// its output goes to Output or, when logFile is set, is appended to that file.
func Launch(name string, cmd *exec.Cmd, logFile string) (*Process, error) {
	out := &SyncBuffer{Max: 1 << 20}
	var w io.Writer = out
	if logFile != "" {
		f, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("start %s: %w", name, err)
		}
		defer f.Close() // the child has its own descriptor
		fmt.Fprintf(f, "=== acv: start of %s at %s\n", name, time.Now().Format(time.RFC3339Nano))
		w = f
	}
	cmd.Stdout, cmd.Stderr = w, w
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig, cmd.SysProcAttr.Setpgid = syscall.SIGKILL, true
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// startReady starts bin as name (as cred's user when set) and polls ready until it holds; on
// failure, or an exit first, the process is killed and the error carries its output.
func startReady(ctx context.Context, name string, cred *syscall.Credential, within time.Duration, ready func() error, bin string, args ...string) (*Process, error) {
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	p, err := Launch(name, cmd, "")
	if err != nil {
		return nil, err
	}
	err = Poll(ctx, within, 50*time.Millisecond, func() error {
		if p.Exited() {
			return giveUp{errors.New("exited")}
		}
		return ready()
	})
	if err != nil {
		p.Kill()
		return nil, fmt.Errorf("%s not ready: %w\n%s", name, err, p.Output())
	}
	return p, nil
}

// Output is what the process printed so far (the last MiB), unless it logs to a file, for error
// messages.
func (p *Process) Output() string { return p.out.String() }

// TailFile is the last n lines of the file at path (a server's log), for error messages.
func TailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	l := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

// Pid is the process id, for reading its CPU and memory from /proc.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited tells whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// ExitCode is the exit code of a process that ended, -1 when a signal ended it.
func (p *Process) ExitCode() int {
	<-p.done
	return p.cmd.ProcessState.ExitCode()
}

// Stop asks the process to end (SIGTERM) and kills it after the grace period; it tells whether
// the process ended within the grace period.
func (p *Process) Stop(grace time.Duration) bool {
	return p.signal(syscall.SIGTERM, grace)
}

func (p *Process) signal(sig syscall.Signal, grace time.Duration) bool {
	if p == nil || p.Exited() {
		return true
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
		return true
	case <-time.After(grace):
		p.Kill()
		return false
	}
}

// Kill ends the process and its group at once, as a crash would.
func (p *Process) Kill() {
	if p == nil || p.Exited() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// giveUp wraps an error that makes Poll stop at once.
type giveUp struct{ error }

func (g giveUp) Unwrap() error { return g.error }

// Poll calls check every interval until it returns nil, and returns its last error once within
// has passed (after one call when within is 0) or ctx ends.
func Poll(ctx context.Context, within, every time.Duration, check func() error) error {
	deadline := time.Now().Add(within)
	for {
		err := check()
		var g giveUp
		if errors.As(err, &g) {
			return g.error
		}
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (%w)", err, ctx.Err())
		case <-time.After(every):
		}
	}
}

// lockFile takes an exclusive flock on path (created with mode perm), waiting up to within for
// another holder; the kernel drops it when the holder dies, however it dies.
func lockFile(ctx context.Context, path string, perm os.FileMode, within time.Duration) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, perm)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	_ = f.Chmod(perm) // whatever the creator's umask
	err = Poll(ctx, within, 10*time.Millisecond, func() error {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("%s is locked by another process", path)
		} else if err != nil && !errors.Is(err, syscall.EINTR) {
			return giveUp{fmt.Errorf("lock %s: %w", path, err)}
		}
		return err
	})
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

// Metrics are the samples of a Prometheus text exposition by series as exposed, e.g.
// `acv_dependency_up{dependency="kafka"}`.
type Metrics map[string]float64

// ParseMetrics reads the samples of a Prometheus text exposition; comments and lines that
// are not samples are skipped.
func ParseMetrics(text string) Metrics {
	m := Metrics{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i <= 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		m[line[:i]] = v
	}
	return m
}

// Has tells whether any series of the metric name was exposed.
func (m Metrics) Has(name string) bool {
	_, n := m.sum(name)
	return n > 0
}

// Sum adds every series of the metric name, whatever its labels.
func (m Metrics) Sum(name string) float64 {
	sum, _ := m.sum(name)
	return sum
}

func (m Metrics) sum(name string) (sum float64, n int) {
	for series, v := range m {
		if series == name || strings.HasPrefix(series, name+"{") {
			sum, n = sum+v, n+1
		}
	}
	return sum, n
}

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
	ended := func() error {
		if _, err := processIdentity(pid); err == nil {
			return errors.New("still running")
		}
		return nil
	}
	if err != nil || pid <= 1 || pid == os.Getpid() || ended() == nil || !runs(pid, exe) {
		return nil
	}
	if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop stale %s (pid %d, %s): %w", exe, pid, pidFile, err)
	}
	if Poll(context.Background(), grace, 50*time.Millisecond, ended) != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		return Poll(context.Background(), grace, 50*time.Millisecond, ended)
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

// processIdentity is "pid starttime" of a running process (not a zombie): the start time
// (field 22 of /proc/pid/stat) tells it from a later process given the same id.
func processIdentity(pid int) (string, error) {
	f, ok := StatFields("/proc/" + strconv.Itoa(pid) + "/stat")
	if !ok || f[0] == "Z" || f[0] == "X" || len(f) < 20 {
		return "", fmt.Errorf("process %d is not running", pid)
	}
	return strconv.Itoa(pid) + " " + f[19], nil
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
