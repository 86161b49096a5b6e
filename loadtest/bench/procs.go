package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/procfs"

	"github.com/acv/acv/internal/localenv"
)

// The parts whose CPU the cost table attributes to a verify, in its column order.
const (
	partAPI      = "API"
	partRedis    = "Redis"
	partRelay    = "relay"
	partConsumer = "consumer"
	partBroker   = "Kafka broker"
	partPostgres = "Postgres"
	partLoadgen  = "load generator"
	// partBrokerJIT is the broker JVM's JIT compilers, reported apart from the broker.
	partBrokerJIT = "broker JIT"
	// partMachine is the whole machine busy (all processes, the kernel, other work); every
	// sample holds it.
	partMachine = "machine"
)

var partOrder = []string{partAPI, partRedis, partRelay, partConsumer, partBroker, partPostgres, partLoadgen}

var proc, _ = procfs.NewDefaultFS()

func pidStat(pid int) (s procfs.ProcStat, ok bool) {
	p, err := proc.Proc(pid)
	if err == nil {
		s, err = p.Stat()
	}
	return s, err == nil
}

// pidCPU is a process's own user+system CPU seconds so far, children excluded; 0 when gone.
func pidCPU(pid int) float64 {
	s, _ := pidStat(pid)
	return s.CPUTime()
}

// pgServerCPU is a whole PostgreSQL server's CPU seconds: the postmaster's own, every live
// child's, and the ended children's it waited for (cutime+cstime), so a backend that ends
// within a measured interval counts exactly once.
func pgServerCPU(postmaster int) float64 {
	pm, ok := pidStat(postmaster)
	if !ok {
		return 0
	}
	total := pm.CPUTime() + float64(pm.CUTime+pm.CSTime)/100 // USER_HZ
	for _, s := range childrenOf(postmaster) {
		total += s.CPUTime()
	}
	return total
}

// childrenOf is the processes whose parent is pid (a PostgreSQL server's backends and workers).
func childrenOf(pid int) []procfs.ProcStat {
	procs, _ := proc.AllProcs()
	var out []procfs.ProcStat
	for _, p := range procs {
		if s, err := p.Stat(); err == nil && s.PPID == pid {
			out = append(out, s)
		}
	}
	return out
}

// jitCPU sums the CPU of a JVM's live compiler threads ("C1 CompilerThre", "C2 CompilerThre");
// an ended compiler thread's CPU counts as the process's.
func jitCPU(pid int) float64 {
	threads, _ := proc.AllThreads(pid)
	var t float64
	for _, th := range threads {
		if s, err := th.Stat(); err == nil && strings.Contains(s.Comm, "CompilerThre") {
			t += s.CPUTime()
		}
	}
	return t
}

// machineBusy is the CPU seconds the whole machine spent busy so far (all cores, idle and
// iowait left out).
func machineBusy() float64 {
	st, err := proc.Stat()
	if err != nil {
		return 0
	}
	c := st.CPUTotal
	return c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ + c.Steal + c.Guest + c.GuestNice
}

func loadAvg() string {
	l, err := proc.LoadAvg()
	if err != nil {
		return "?"
	}
	return fmt.Sprintf("%.2f %.2f %.2f", l.Load1, l.Load5, l.Load15)
}

// meter reads the CPU seconds of named parts; each reader returns the part's total so far.
type meter map[string]func() float64

// cpuSample is each part's CPU seconds at one instant, or over a window.
type cpuSample map[string]float64

func (m meter) sample() cpuSample {
	s := cpuSample{partMachine: machineBusy()}
	for name, read := range m {
		s[name] = read()
	}
	return s
}

func (m meter) during(fn func()) cpuSample {
	s0 := m.sample()
	fn()
	return m.sample().since(s0)
}

func (s cpuSample) since(s0 cpuSample) cpuSample {
	d := cpuSample{}
	for name, v := range s {
		d[name] = v - s0[name]
	}
	return d
}

// pipelineNice is the niceness of the pipeline's processes in the run that shows the hot
// path's latency when they yield to it: their lag bound is a second, a verify's is not.
const pipelineNice = 10

// renicePipeline sets the niceness of every thread (Linux keeps it per thread; new threads and
// forked backends inherit it) of the relay and consumer, the Kafka broker, and the PostgreSQL
// server with every backend.
func (b *bench) renicePipeline(nice int, procs ...*acvProc) error {
	pids := []int{b.pg.Pid()}
	for _, s := range childrenOf(b.pg.Pid()) {
		pids = append(pids, s.PID)
	}
	if b.kafka != nil {
		pids = append(pids, b.kafka.Nodes[0].Pid())
	}
	for _, p := range procs {
		pids = append(pids, p.Pid())
	}
	for _, pid := range pids {
		threads, err := proc.AllThreads(pid)
		if err != nil {
			return fmt.Errorf("threads of %d: %w", pid, err)
		}
		for _, t := range threads {
			// A thread that ended since the listing is no failure.
			if err := syscall.Setpriority(syscall.PRIO_PROCESS, t.PID, nice); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("renice thread %d of %d: %w", t.PID, pid, err)
			}
		}
	}
	return nil
}

// acvProc is an acv process under test; base is the API's address (empty without the api
// role), debug serves /metrics.
type acvProc struct {
	*localenv.Process
	base, debug string
}

// startACV starts `acv serve` with roles against the Redis (or Redis Cluster) at redisURL,
// logging as deployed (an access line per request) to a file, and returns once it is ready.
func (b *bench) startACV(ctx context.Context, roles, redisURL string) (*acvProc, error) {
	addr, err := localenv.FreeAddr()
	debug, err2 := localenv.FreeAddr()
	if err := errors.Join(err, err2); err != nil {
		return nil, err
	}
	var brokers string
	if b.kafka != nil {
		brokers = strings.Join(b.kafka.Brokers, ",")
	}
	name := strings.ReplaceAll(roles, ",", "-")
	if redisURL != b.cfg.RedisURL {
		name += "-cluster"
	}
	cmd := exec.Command(b.acv, "serve")
	cmd.Env = append(os.Environ(),
		"ACV_HTTP_ADDR="+addr, "ACV_DEBUG_ADDR="+debug, "ACV_ADMIN_ADDR=",
		"ACV_REDIS_URL="+redisURL, "ACV_DATABASE_URL="+b.cfg.DatabaseURL,
		"KAFKA_BROKERS="+brokers, "ACV_ROLES="+roles,
		"ACV_MASTER_KEY=", "ACV_MASTER_KEY_FILE="+filepath.Join(b.dir, "master.key"),
		"ACV_INSTANCE=bench-"+name)
	lp, err := localenv.Launch("acv "+roles, cmd, filepath.Join(b.dir, "acv-"+name+".log"))
	if err != nil {
		return nil, err
	}
	p := &acvProc{Process: lp, debug: "http://" + debug}
	if strings.Contains(roles, "api") {
		p.base = "http://" + addr
	}
	if err := waitHTTP(ctx, cmp.Or(p.base, p.debug)+"/readyz", "GET"); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

func (p *acvProc) stop() {
	p.Stop(20 * time.Second)
}

func (p *acvProc) cpu() float64 { return pidCPU(p.Pid()) }

// peakRSS is the process's high-water resident set, in MiB.
func (p *acvProc) peakRSS() float64 {
	pp, err := proc.Proc(p.Pid())
	if err != nil {
		return 0
	}
	s, _ := pp.NewStatus()
	return float64(s.VmHWM) / (1 << 20)
}

// profile starts a CPU profile of p over one measured phase when -profile is set, written to
// name.pprof; the returned function waits for it. A failure is reported, never fatal.
func (b *bench) profile(p *acvProc, name string) (wait func()) {
	if b.profileDir == "" {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		body, err := get(fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", p.debug, max(1, int(b.dur/time.Second))))
		if err == nil {
			err = os.MkdirAll(b.profileDir, 0o755)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(b.profileDir, name+".pprof"), body, 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: profile", name+":", err)
		}
	}()
	return func() { <-done }
}

func get(url string) ([]byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %s", resp.Status)
	}
	return body, err
}

// waitHTTP waits up to a minute for url to answer method with any status.
func waitHTTP(ctx context.Context, url, method string) error {
	err := localenv.Poll(ctx, time.Minute, 100*time.Millisecond, func() error {
		req, _ := http.NewRequestWithContext(ctx, method, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("%s not answering: %w", url, err)
	}
	return nil
}
