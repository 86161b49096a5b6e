package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/acv/acv/audit"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/loadtest/loadgen"
)

// proc is the acv process under test.
type proc struct {
	cmd  *exec.Cmd
	base string
}

func (b *bench) startACV(ctx context.Context, roles string) (*proc, error) {
	port, err := localenv.FreePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(b.acv, "serve")
	cmd.Env = append(os.Environ(),
		"ACV_HTTP_ADDR="+addr, "ACV_REDIS_URL="+b.cfg.RedisURL, "ACV_DATABASE_URL="+b.cfg.DatabaseURL,
		"KAFKA_BROKERS="+strings.Join(b.kafka.Brokers, ","), "ACV_ROLES="+roles,
		"ACV_MASTER_KEY=", "ACV_MASTER_KEY_FILE="+filepath.Join(b.dir, "master.key"),
		"ACV_INSTANCE=bench-"+strings.ReplaceAll(roles, ",", "-"))
	// The service logs as deployed (one access line per request, level info), to a file.
	logf, err := os.Create(filepath.Join(b.dir, "acv-"+strings.ReplaceAll(roles, ",", "-")+".log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", b.acv, err)
	}
	p := &proc{cmd: cmd, base: "http://" + addr}
	if err := waitHTTP(ctx, p.base+"/readyz", "GET"); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

// cpu is the process's user+system CPU seconds so far.
func (p *proc) cpu() float64 { return pidCPU(p.cmd.Process.Pid) }

// machineBusy is the CPU seconds the whole machine spent busy so far (all cores).
func machineBusy() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])[1:]
	var busy float64
	for i, v := range f {
		n, _ := strconv.ParseFloat(v, 64)
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy / 100
}

func pidCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // clock ticks; 100 Hz on Linux
}

// peakRSS is the process's high-water resident set, in MiB.
func (p *proc) peakRSS() float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			kb, _ := strconv.ParseFloat(strings.Fields(l)[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// hotPath measures signed verify with the audit pipeline paused: the API alone, its events
// queueing in the Redis outbox.
func (b *bench) hotPath(ctx context.Context) error {
	p, err := b.startACV(ctx, "api")
	if err != nil {
		return err
	}
	defer p.stop()
	cpu0, rcpu0, busy0 := p.cpu(), pidCPU(b.redis.Pid()), machineBusy()
	rep := b.load(ctx, p.base, 0, len(b.pool))
	b.hot = rep
	share := func(sec float64) float64 { return 100 * sec / (rep.Seconds * float64(numCPU())) }
	b.rows = append(b.rows, row{name: "acv signed verify, hot path only (relay paused)", rps: rep.RPS, p50: rep.P50Ms, p99: rep.P99Ms,
		errors: rep.Errors, genCPU: genShare(rep),
		note: fmt.Sprintf("%d successes; CPU of the machine: acv %.0f%%, redis %.0f%%, all %.0f%%; acv peak RSS %.0f MiB", rep.Successes,
			share(p.cpu()-cpu0), share(pidCPU(b.redis.Pid())-rcpu0), share(machineBusy()-busy0), p.peakRSS())})
	half := rep.RPS / 2
	hr := b.load(ctx, p.base, half, len(b.pool))
	b.rows = append(b.rows, row{name: fmt.Sprintf("acv signed verify at half the hot-path max (%.0f req/s target), relay paused", half), rps: hr.RPS,
		p50: hr.P50Ms, p99: hr.P99Ms, errors: hr.Errors, genCPU: genShare(hr), note: "the API and Redis alone"})
	b.halfHot = hr
	return nil
}

// sustained measures verify with the relay and consumer running, at the highest rate at which
// the events not yet in Postgres (outbox plus consumer lag) stay under one second's worth.
func (b *bench) sustained(ctx context.Context) error {
	p, err := b.startACV(ctx, "api,relay,consumer")
	if err != nil {
		return err
	}
	defer p.stop()
	// The hot-path phase left its events in the outbox: let the pipeline drain them first.
	if err := b.waitDrained(ctx, 5*time.Minute); err != nil {
		return err
	}
	rate := 0.0 // first try: as fast as the load generator goes
	var kept loadgen.Report
	var keptLag float64
	for attempt := 0; attempt < 4; attempt++ {
		mon := b.monitor(ctx)
		cpu0 := p.cpu()
		rep := b.load(ctx, p.base, rate, len(b.pool))
		maxPending := mon()
		lagSec := float64(maxPending) / rep.RPS
		fmt.Fprintf(os.Stderr, "bench: sustained at %.0f req/s: at most %d events not yet in Postgres (%.2f s), service CPU %.1f s\n",
			rep.RPS, maxPending, lagSec, p.cpu()-cpu0)
		if err := b.waitDrained(ctx, 5*time.Minute); err != nil {
			return err
		}
		if lagSec < 1 {
			kept, keptLag = rep, lagSec
			break
		}
		rate = rep.RPS * 0.75
	}
	if kept.Requests == 0 {
		return fmt.Errorf("the pipeline never kept up within one second")
	}
	b.sust = kept
	b.rows = append(b.rows, row{name: "acv signed verify, sustained (relay + consumer running)", rps: kept.RPS, p50: kept.P50Ms, p99: kept.P99Ms,
		errors: kept.Errors, genCPU: genShare(kept), note: fmt.Sprintf("pipeline lag at most %.2f s of events; peak RSS %.0f MiB", keptLag, p.peakRSS())})

	half := b.hot.RPS / 2
	rep := b.load(ctx, p.base, half, len(b.pool))
	b.rows = append(b.rows, row{name: fmt.Sprintf("acv signed verify at half the hot-path max (%.0f req/s target), pipeline running", half), rps: rep.RPS,
		p50: rep.P50Ms, p99: rep.P99Ms, errors: rep.Errors, genCPU: genShare(rep), note: "pipeline running"})
	b.halfRate = rep
	return b.waitDrained(ctx, 5*time.Minute)
}

// monitor samples the events not yet in Postgres until the returned function is called, which
// reports the largest count seen.
func (b *bench) monitor(ctx context.Context) func() int64 {
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan int64, 1)
	go func() {
		var worst int64
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-mctx.Done():
				done <- worst
				return
			case <-t.C:
				worst = max(worst, b.pending(mctx))
			}
		}
	}()
	return func() int64 {
		cancel()
		return <-done
	}
}

// pending is the number of verification-log events not yet written: outbox plus Kafka lag.
func (b *bench) pending(ctx context.Context) int64 {
	n, _, err := audit.OutboxLen(ctx, b.deps.Redis, cache.OutboxStreams())
	if err != nil {
		return 0
	}
	lag, err := audit.GroupLag(ctx, b.kafka.Brokers, b.cfg.KafkaTopic, b.cfg.ConsumerGroup)
	if err == nil {
		for _, l := range lag {
			n += l
		}
	}
	return n
}

func (b *bench) waitDrained(ctx context.Context, within time.Duration) error {
	deadline := time.Now().Add(within)
	for b.pending(ctx) > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("the pipeline did not drain within %s", within)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}
