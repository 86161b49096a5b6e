package main

import (
	"fmt"
	"os"
	"strconv"

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
)

var partOrder = []string{partAPI, partRedis, partRelay, partConsumer, partBroker, partPostgres, partLoadgen}

// clockTick is the unit of /proc/<pid>/stat's CPU times: USER_HZ, 100 on Linux.
const clockTick = 100

// procStat is a process's CPU seconds from /proc/<pid>/stat: its own user+system time (all its
// threads, those that ended included) and, apart, the user+system time of the children it
// waited for.
type procStat struct {
	ppid     int
	own      float64
	children float64
}

func readProcStat(pid int) (procStat, bool) {
	return parseStat(fmt.Sprintf("/proc/%d/stat", pid))
}

// taskCPU is one thread's own CPU seconds so far.
func taskCPU(pid, tid int) float64 {
	s, _ := parseStat(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid))
	return s.own
}

func parseStat(path string) (procStat, bool) {
	f, ok := localenv.StatFields(path)
	if !ok || len(f) < 15 {
		return procStat{}, false
	}
	num := func(k int) float64 { v, _ := strconv.ParseFloat(f[k], 64); return v }
	// f[0] is field 3 (state): ppid is field 4, utime 14, stime 15, cutime 16, cstime 17.
	ppid, _ := strconv.Atoi(f[1])
	return procStat{ppid: ppid, own: (num(11) + num(12)) / clockTick, children: (num(13) + num(14)) / clockTick}, true
}

// pidCPU is a process's own user+system CPU seconds so far, children excluded; 0 when it is
// gone.
func pidCPU(pid int) float64 {
	s, _ := readProcStat(pid)
	return s.own
}

// selfCPU is this process's own CPU seconds: the load generator's, with the bench's sampling
// of the pipeline lag (a few requests every 250 ms).
func selfCPU() float64 { return pidCPU(os.Getpid()) }

// pgServerCPU is the CPU seconds of a whole PostgreSQL server so far: the postmaster's own,
// every live child's (backends, checkpointer, WAL writer, autovacuum workers, …) and the
// children's that ended, which the postmaster waited for (its cutime+cstime). A backend that
// ends within a measured interval is thus counted exactly once.
func pgServerCPU(postmaster int) float64 {
	pm, ok := readProcStat(postmaster)
	if !ok {
		return 0
	}
	total := pm.own + pm.children
	for _, s := range childrenOf(postmaster) {
		total += s.own
	}
	return total
}

// meter reads the CPU seconds of named parts; each reader returns the part's total so far.
type meter map[string]func() float64

// cpuSample is each part's CPU seconds at one instant.
type cpuSample map[string]float64

func (m meter) sample() cpuSample {
	s := cpuSample{}
	for name, read := range m {
		s[name] = read()
	}
	return s
}

// since is the CPU seconds each part spent from s0 to s.
func (s cpuSample) since(s0 cpuSample) cpuSample {
	d := cpuSample{}
	for name, v := range s {
		d[name] = v - s0[name]
	}
	return d
}
