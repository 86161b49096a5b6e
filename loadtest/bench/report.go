package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/acv/acv/audit"
	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/loadtest/loadgen"
	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"
)

// idleWindow is how long the pipeline's idle CPU is read.
const idleWindow = 5 * time.Second

// costRow is one line of the cost table: the CPU each process spent over a phase's window,
// divided by the verifies that succeeded in it.
type costRow struct {
	name     string
	verifies int64 // successes (pgbench: transactions processed), counted exactly
	rps      float64
	p50, p99 float64   // ms; 0 = not measured
	cpu      cpuSample // CPU seconds per part over the window; a part absent ran no work of this phase
	note     string
}

func newCostRow(name string, rep loadgen.Report, cpu cpuSample, note string) costRow {
	return costRow{name: name, verifies: rep.Successes, rps: rep.RPS, p50: rep.P50Ms, p99: rep.P99Ms, cpu: cpu, note: note}
}

// at is a part's CPU µs per verify, and whether the part ran in this phase.
func (c costRow) at(part string) (float64, bool) {
	v, ok := c.cpu[part]
	if !ok || c.verifies == 0 {
		return 0, false
	}
	return 1e6 * v / float64(c.verifies), true
}

// us is a part's CPU µs per verify as a table cell, – when it did not run.
func (c costRow) us(part string) string {
	if v, ok := c.at(part); ok {
		return fmt.Sprintf("%.1f", v)
	}
	return "–"
}

// Names of the cost rows the targets read.
const (
	costCeiling   = "HTTP ceiling: bare Gin handler (per request)"
	costHot       = "acv hot path (ACV_ROLES=api, relay paused), 1 Redis"
	costCluster   = "acv hot path (ACV_ROLES=api, relay paused), 3-master Redis Cluster"
	costSustained = "acv sustained: API, relay, consumer as 3 processes; Kafka 4.4.0; window drained to drained"
	costBacklog   = "pipeline alone, draining the earlier phases' outbox backlog (per event)"
	costPlainPG   = "plain PostgreSQL: pgbench, UPDATE + log INSERT per transaction"
)

func (b *bench) costTable(sb *strings.Builder) {
	if len(b.costs) == 0 {
		return
	}
	fmt.Fprintf(sb, "\n### CPU per verify, by process (µs of user+system CPU from /proc/<pid>/stat, children excluded, ÷ successful verifies)\n\n")
	fmt.Fprintf(sb, "| phase | verifies | req/s | p50 ms | p99 ms | %s | total | machine busy | notes |\n|---|---:|---:|---:|---:|%s---:|---:|---|\n",
		strings.Join(partOrder, " | "), strings.Repeat("---:|", len(partOrder)))
	for _, c := range b.costs {
		fmt.Fprintf(sb, "| %s | %d | %.0f | %s | %s |", c.name, c.verifies, c.rps, dash("%.2f", c.p50), dash("%.2f", c.p99))
		var total float64
		for _, p := range partOrder {
			fmt.Fprintf(sb, " %s |", c.us(p))
			v, _ := c.at(p)
			total += v
		}
		note := c.note
		if v, ok := c.at(partBrokerJIT); ok {
			note += fmt.Sprintf("; broker JIT compilers apart (JVM warm-up): %.1f µs", v)
		}
		fmt.Fprintf(sb, " %.1f | %s | %s |\n", total, c.us(partMachine), note)
	}

	if len(b.idle) > 0 {
		fmt.Fprintf(sb, "\nIdle, pipeline processes running and no load (CPU ms per second, over %.0f s):", idleWindow.Seconds())
		for _, p := range partOrder {
			if v, ok := b.idle[p]; ok {
				fmt.Fprintf(sb, " %s %.1f;", p, 1e3*v/idleWindow.Seconds())
			}
		}
		fmt.Fprintf(sb, " the load generator column is the bench process, idle.\n")
	}

	// us of the named cost row (0 when the run did not measure it) for each part.
	at := func(name string, parts ...string) (us []float64, ok bool) {
		i := slices.IndexFunc(b.costs, func(c costRow) bool { return c.name == name })
		for _, p := range parts {
			v := 0.0
			if i >= 0 {
				v, _ = b.costs[i].at(p)
			}
			us = append(us, v)
		}
		return us, i >= 0
	}
	fmt.Fprintf(sb, "\nTargets (same run):\n")
	sust, okSust := at(costSustained, partRelay, partConsumer, partPostgres, partBroker, partAPI)
	if okSust {
		pipe := sust[0] + sust[1] + sust[2]
		fmt.Fprintf(sb, "- pipeline CPU per verify (relay %.1f + consumer %.1f + Postgres %.1f) = %.1f µs ≤ 25 µs: %s (sustained); Kafka broker apart: %.1f µs",
			sust[0], sust[1], sust[2], pipe, verdict(pipe <= 25), sust[3])
		if bl, ok := at(costBacklog, partRelay, partConsumer, partPostgres, partBroker); ok {
			fmt.Fprintf(sb, "; with full batches (the backlog): %.1f + %.1f + %.1f = %.1f µs, broker %.1f µs", bl[0], bl[1], bl[2], bl[0]+bl[1]+bl[2], bl[3])
		}
		fmt.Fprintln(sb)
	}
	hot, okHot := at(costHot, partAPI)
	bare, _ := at(costCeiling, partAPI)
	if api := hot[0]; okHot && bare[0] > 0 {
		fmt.Fprintf(sb, "- API process CPU per verify ÷ bare Gin handler CPU per request = %.1f ÷ %.1f µs = %.2f ≤ 2: %s (hot path)",
			api, bare[0], api/bare[0], verdict(api/bare[0] <= 2))
		if okSust {
			fmt.Fprintf(sb, "; sustained phase: %.1f µs, %.2f", sust[4], sust[4]/bare[0])
		}
		fmt.Fprintln(sb)
	}
}

func verdict(met bool) string {
	if met {
		return "met"
	}
	return "**missed**"
}

// clusterTable renders how the cluster phase's script calls and Redis CPU spread over the
// masters; its totals beside the single Redis are the hot-path rows of the tables above.
func (b *bench) clusterTable(sb *strings.Builder) {
	if len(b.masters) == 0 {
		return
	}
	fmt.Fprintf(sb, "\n### One project through a %d-master Redis Cluster (same run, hot path, relay paused)\n", clusterMasters)
	fmt.Fprintf(sb, "\n| master | slots | script calls (EVALSHA/EVAL) | share of calls | CPU µs per verify | share of Redis CPU |\n|---|---|---:|---:|---:|---:|\n")
	for _, m := range b.masters {
		fmt.Fprintf(sb, "| %s | %s | %d | %.1f%% | %.1f | %.1f%% |\n", m.addr, m.slots, m.calls,
			m.callShare, 1e6*m.cpu/float64(max(b.clusterRep.Successes, 1)), m.cpuShare)
	}
}

// storageFigures are what the log store costs per event, the capacity model's inputs besides
// CPU, read once the sustained phase drained.
type storageFigures struct {
	logOnlyWAL                float64 // WAL per log row of inserting log rows alone
	logBytes, logRows         int64   // verification_logs on disk (indexes, TOAST) and its rows
	kafkaBytes, kafkaMessages int64   // the log topic's segments on disk, messages produced
}

// logStat is the log table's row count and PostgreSQL's WAL position (bytes since 0/0).
type logStat struct{ rows, walLSN int64 }

func (b *bench) logStats(ctx context.Context) (logStat, error) {
	conn, err := pgx.Connect(ctx, b.cfg.DatabaseURL)
	if err != nil {
		return logStat{}, err
	}
	defer conn.Close(ctx)
	var s logStat
	err = conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM verification_logs), (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint`).Scan(&s.rows, &s.walLSN)
	return s, err
}

// measureStorage reads the log table's size per row and the Kafka topic's size per message,
// once the sustained phase drained.
func (b *bench) measureStorage(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, b.cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM verification_logs),
		(SELECT coalesce(sum(pg_total_relation_size(relid)), 0)::bigint FROM pg_partition_tree('verification_logs') WHERE isleaf)`).
		Scan(&b.storage.logRows, &b.storage.logBytes); err != nil {
		return fmt.Errorf("log table size: %w", err)
	}
	if err := b.measureLogWAL(ctx, conn); err != nil {
		return fmt.Errorf("log-only WAL: %w", err)
	}
	if b.kafka == nil {
		return nil
	}
	if b.storage.kafkaBytes, err = b.kafka.TopicLogBytes(audit.Topic); err != nil {
		return err
	}
	cl := &kafka.Client{Addr: kafka.TCP(b.kafka.Brokers...), Timeout: 10 * time.Second}
	reqs := make([]kafka.OffsetRequest, kafkaPartitions)
	for p := range reqs {
		reqs[p] = kafka.LastOffsetOf(p)
	}
	offs, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{audit.Topic: reqs}})
	if err != nil {
		return fmt.Errorf("kafka offsets: %w", err)
	}
	for _, p := range offs.Topics[audit.Topic] {
		b.storage.kafkaMessages += p.LastOffset
	}
	return nil
}

// measureLogWAL inserts copies of the run's log rows under new UUIDv7 ids and the time now
// (the right edge of the time-ordered indexes, as the newest events are), 1,000 a transaction,
// and reads the WAL they took per row. The copies stay: run it after the size was read.
func (b *bench) measureLogWAL(ctx context.Context, conn *pgx.Conn) error {
	const batch, batches = 1000, 50
	if b.storage.logRows < batch {
		return nil
	}
	var lsn0, lsn1 int64
	if err := conn.QueryRow(ctx, `SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint`).Scan(&lsn0); err != nil {
		return err
	}
	var rows int64
	for i := 0; i < batches; i++ {
		tag, err := conn.Exec(ctx, `INSERT INTO verification_logs
			  (id, code_id, project_id, action, result, reason, verified_by, ip_address, verified_at)
			SELECT (lpad(to_hex((extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0') || substr(md5(random()::text), 1, 20))::uuid,
			       code_id, project_id, action, result, reason, verified_by, ip_address, clock_timestamp()
			FROM (SELECT * FROM verification_logs ORDER BY id LIMIT $1 OFFSET $2) r
			ORDER BY 1`, batch, (i*batch)%int(b.storage.logRows-batch))
		if err != nil {
			return err
		}
		rows += tag.RowsAffected()
	}
	if err := conn.QueryRow(ctx, `SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint`).Scan(&lsn1); err != nil {
		return err
	}
	if rows > 0 {
		b.storage.logOnlyWAL = float64(lsn1-lsn0) / float64(rows)
	}
	return nil
}

func scrape(debug string) localenv.Metrics {
	b, _ := get(debug + "/metrics")
	return localenv.ParseMetrics(string(b))
}

// ratioOf is the growth of metric num over the growth of metric den between two scrapes.
func ratioOf(after, before localenv.Metrics, num, den string) float64 {
	d := after.Sum(den) - before.Sum(den)
	if d <= 0 {
		return 0
	}
	return (after.Sum(num) - before.Sum(num)) / d
}

// storageText renders the storage and batching figures, and what they come to at 100,000
// verifies a second.
func (b *bench) storageText(sb *strings.Builder) {
	s, w, bl := b.storage, b.sustWin, b.backlog
	if s.logRows == 0 && w.rows == 0 {
		return
	}
	fmt.Fprintf(sb, "\n### Storage and batching per verify (same run)\n\n| measurement | value | at 100,000 verifies/s |\n|---|---:|---:|\n")
	const perDay = 100_000 * 86_400
	line := func(cond bool, format string, args ...any) {
		if cond {
			fmt.Fprintf(sb, format+"\n", args...)
		}
	}
	wal := func(what string, w float64) {
		line(w > 0, "| %s | %.0f bytes | %.1f MB/s, %.1f TB/day |", what, w, w*100_000/1e6, w*perDay/1e12)
	}
	if w.rows > 0 {
		wal(fmt.Sprintf("PostgreSQL WAL per verify (log row, code row update, statistics; pg_current_wal_lsn() over the sustained window ÷ %d rows)", w.rows),
			float64(w.wal)/float64(w.rows))
	}
	if bl.rows > 0 {
		wal("PostgreSQL WAL per verify while the backlog drained (batches of about 1,000)", float64(bl.wal)/float64(bl.rows))
	}
	wal("of which the log row alone (50,000 copies of the run's rows inserted 1,000 a transaction)", s.logOnlyWAL)
	r := float64(s.logBytes) / float64(max(s.logRows, 1))
	line(s.logRows > 0, "| verification_logs on disk per row, indexes included (pg_total_relation_size of every partition ÷ %d rows) | %.0f bytes | %.2f TB/day |",
		s.logRows, r, r*perDay/1e12)
	k := float64(s.kafkaBytes) / float64(max(s.kafkaMessages, 1))
	line(s.kafkaMessages > 0, "| Kafka log per message (lz4 batches, one replica; topic segments ÷ %d messages) | %.0f bytes | %.1f MB/s per replica |",
		s.kafkaMessages, k, k*100_000/1e6)
	line(w.relayBatch > 0, "| relay batch (outbox entries per Kafka write, mean over the sustained window) | %.1f | – |", w.relayBatch)
	line(w.consumerBatch > 0, "| consumer batch (events per PostgreSQL transaction, mean over the sustained window) | %.1f | – |", w.consumerBatch)
	line(w.consumerBatch > 0, "| consumer batch's PostgreSQL transaction (mean over the sustained window) | %.1f ms | – |", w.txMs)
	line(bl.consumerBatch > 0, "| draining the backlog: relay batch, consumer batch, its transaction (means) | %.0f, %.0f, %.1f ms | – |",
		bl.relayBatch, bl.consumerBatch, bl.txMs)
}
