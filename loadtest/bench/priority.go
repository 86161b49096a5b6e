package main

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// pipelineNice is the niceness the pipeline's processes get for the run that shows what the
// hot path's latency is when they yield to it: on a node they share with the API, the relay,
// the consumer, the broker and PostgreSQL can wait a few milliseconds (their lag bound is a
// second) while a verify cannot. Ten is a tenth of the CPU share of niceness 0 under contention,
// and all of it when the API leaves the CPU idle.
const pipelineNice = 10

// renice sets the niceness of every thread of pid: Linux keeps it per thread, and a thread
// started later inherits its creator's, so the whole process runs at it from here on.
func renice(pid, nice int) error {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return fmt.Errorf("threads of %d: %w", pid, err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		// A thread that ended since the listing is no failure.
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil && err != syscall.ESRCH {
			return fmt.Errorf("renice thread %d of %d: %w", tid, pid, err)
		}
	}
	return nil
}

// childrenOf reads the processes whose parent is pid (a PostgreSQL server's backends and
// background workers), by pid.
func childrenOf(pid int) map[int]procStat {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := map[int]procStat{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil || p == pid {
			continue
		}
		if s, ok := readProcStat(p); ok && s.ppid == pid {
			out[p] = s
		}
	}
	return out
}

// renicePipeline sets the niceness of the pipeline's processes: the relay and consumer, the
// Kafka broker, and the PostgreSQL server with every backend (new backends fork from the
// postmaster, so they inherit it).
func (b *bench) renicePipeline(nice int, procs ...*proc) error {
	pids := []int{b.pg.Pid()}
	for pid := range childrenOf(b.pg.Pid()) {
		pids = append(pids, pid)
	}
	if b.kafka != nil {
		pids = append(pids, b.kafka.Nodes[0].Pid())
	}
	for _, p := range procs {
		pids = append(pids, p.cmd.Process.Pid)
	}
	for _, pid := range pids {
		if err := renice(pid, nice); err != nil {
			return err
		}
	}
	return nil
}
