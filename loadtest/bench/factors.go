package main

import (
	"context"
	"fmt"
	"path/filepath"
)

// fcallFactors (-only factors) measures what makes the verify script cost Redis more: the bare
// setup against itself with one factor of a deployment changed at a time, then with all of
// them, each run beside a run of the bare setup in the same round (the machine is shared, so
// only the ratio holds). It prints a line per run: usec per FCALL and per SET (INFO
// commandstats) and redis-server's CPU per verify.
func (b *bench) fcallFactors(ctx context.Context) error {
	const codes = 30_000
	_, makeRun, ref := redisSetups(b.conc)
	ref.run.Codes = codes
	with := func(name string, change func(*redisSetup)) redisSetup {
		s := ref
		s.name = name
		change(&s)
		return s
	}
	setups := []redisSetup{
		with("appendfsync always", func(s *redisSetup) { s.redis.FsyncAlways = true }),
		with("requirepass", func(s *redisSetup) { s.redis.Password = makeRun.redis.Password }),
		with("relay running with the verifies", func(s *redisSetup) { s.run.RelayDuring = true }),
		with(fmt.Sprintf("paced at %.0f verifies/s", makeRun.run.Rate), func(s *redisSetup) { s.run.Rate = makeRun.run.Rate }),
		with(fmt.Sprintf("%d other codes stored", makeRun.run.Stored), func(s *redisSetup) { s.run.Stored = makeRun.run.Stored }),
		with("all of them (make run)", func(s *redisSetup) { s.redis, s.run = makeRun.redis, makeRun.run; s.run.Codes = codes }),
	}
	for i, s := range setups {
		for round := 0; round < 2; round++ {
			for j, run := range []redisSetup{ref, s} {
				v, err := measureRedisCPU(ctx, filepath.Join(b.dir, fmt.Sprintf("factor-%d-%d-%d", i, round, j)), run)
				if err != nil {
					return fmt.Errorf("%s: %w", run.name, err)
				}
				fmt.Printf("%d.%d  %-36s FCALL %5.1f µs/call  SET %4.1f µs/call  redis-server %5.1f µs/verify  relay %4.1f µs/verify\n",
					i, round, run.name, v.FCALL(), v.usecPerCall("set"), v.Process, v.Relay)
			}
		}
	}
	return nil
}
