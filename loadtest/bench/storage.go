package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/acv/acv/audit"
	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"
)

// storageFigures are what the log store and the pipeline cost per event, the capacity
// model's inputs besides CPU.
type storageFigures struct {
	// walBytes is the WAL PostgreSQL wrote over the kept sustained window (drained to
	// drained), walRows the log rows that window inserted.
	walBytes, walRows int64
	// logOnlyWAL is the WAL per log row of inserting log rows alone (copies of the run's rows
	// under new time-ordered ids, 1,000 a transaction, as the consumer writes them): the log's
	// share of walBytes, the rest being the code row's update and the statistics.
	logOnlyWAL float64
	// logBytes is verification_logs on disk, every partition with its indexes and TOAST;
	// logRows the rows it holds.
	logBytes, logRows int64
	// kafkaBytes is the log topic's segments on disk, kafkaMessages the messages produced.
	kafkaBytes, kafkaMessages int64
	// relayBatch is the mean outbox entries per relay batch (one Kafka write), consumerBatch
	// the mean events per consumer transaction, over the kept sustained window.
	relayBatch, consumerBatch float64
	// consumerTxMs is the mean PostgreSQL transaction of one consumer batch, in ms; the
	// backlog fields are the same while the pipeline drained the earlier phases' events.
	consumerTxMs                                       float64
	backlogRelayBatch, backlogConsumerBatch, backlogTx float64
	// backlogWAL is the WAL per log row while the backlog drained (large batches).
	backlogWAL float64
}

// logStats is the log table's row count and PostgreSQL's WAL position (bytes since 0/0).
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

// measureLogWAL inserts copies of the run's log rows under new ids and times, ordered as the
// pipeline's newest events are (UUIDv7 ids, the time now: the right edge of the key
// (verified_at, id) and of the time-ordered indexes), 1,000 a transaction, and reads the WAL
// they took per row. Run after
// the size was read: the copies stay in the table.
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

// scrape reads a process's Prometheus metrics, each name's samples summed over its labels;
// an empty map when it cannot.
func scrape(debug string) map[string]float64 {
	out := map[string]float64{}
	resp, err := http.Get(debug + "/metrics")
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if l == "" || l[0] == '#' {
			continue
		}
		sp := strings.LastIndexByte(l, ' ')
		if sp < 0 {
			continue
		}
		name := l[:sp]
		if i := strings.IndexByte(name, '{'); i >= 0 {
			name = name[:i]
		}
		if v, err := strconv.ParseFloat(l[sp+1:], 64); err == nil {
			out[name] += v
		}
	}
	return out
}

// ratioOf is the growth of metric num over the growth of metric den between two scrapes.
func ratioOf(after, before map[string]float64, num, den string) float64 {
	d := after[den] - before[den]
	if d <= 0 {
		return 0
	}
	return (after[num] - before[num]) / d
}

// storageText renders the storage figures, with what they come to at 100,000 verifies a
// second (8.64 billion log rows a day).
func (b *bench) storageText() string {
	s := b.storage
	if s.logRows == 0 && s.walRows == 0 {
		return ""
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n### Storage and batching per verify (same run)\n\n| measurement | value | at 100,000 verifies/s |\n|---|---:|---:|\n")
	const perDay = 100_000 * 86_400
	if s.walRows > 0 {
		w := float64(s.walBytes) / float64(s.walRows)
		fmt.Fprintf(&sb, "| PostgreSQL WAL per verify (log row, code row update, statistics; pg_current_wal_lsn() over the sustained window ÷ %d rows) | %.0f bytes | %.1f MB/s, %.1f TB/day |\n",
			s.walRows, w, w*100_000/1e6, w*perDay/1e12)
	}
	if s.backlogWAL > 0 {
		fmt.Fprintf(&sb, "| PostgreSQL WAL per verify while the backlog drained (batches of about 1,000) | %.0f bytes | %.1f MB/s, %.1f TB/day |\n",
			s.backlogWAL, s.backlogWAL*100_000/1e6, s.backlogWAL*perDay/1e12)
	}
	if s.logOnlyWAL > 0 {
		fmt.Fprintf(&sb, "| of which the log row alone (50,000 copies of the run's rows inserted 1,000 a transaction) | %.0f bytes | %.1f MB/s, %.1f TB/day |\n",
			s.logOnlyWAL, s.logOnlyWAL*100_000/1e6, s.logOnlyWAL*perDay/1e12)
	}
	if s.logRows > 0 {
		r := float64(s.logBytes) / float64(s.logRows)
		fmt.Fprintf(&sb, "| verification_logs on disk per row, indexes included (pg_total_relation_size of every partition ÷ %d rows) | %.0f bytes | %.2f TB/day |\n",
			s.logRows, r, r*perDay/1e12)
	}
	if s.kafkaMessages > 0 {
		k := float64(s.kafkaBytes) / float64(s.kafkaMessages)
		fmt.Fprintf(&sb, "| Kafka log per message (lz4 batches, one replica; topic segments ÷ %d messages) | %.0f bytes | %.1f MB/s per replica |\n",
			s.kafkaMessages, k, k*100_000/1e6)
	}
	if s.relayBatch > 0 {
		fmt.Fprintf(&sb, "| relay batch (outbox entries per Kafka write, mean over the sustained window) | %.1f | – |\n", s.relayBatch)
	}
	if s.consumerBatch > 0 {
		fmt.Fprintf(&sb, "| consumer batch (events per PostgreSQL transaction, mean over the sustained window) | %.1f | – |\n", s.consumerBatch)
		fmt.Fprintf(&sb, "| consumer batch's PostgreSQL transaction (mean over the sustained window) | %.1f ms | – |\n", s.consumerTxMs)
	}
	if s.backlogConsumerBatch > 0 {
		fmt.Fprintf(&sb, "| draining the backlog: relay batch, consumer batch, its transaction (means) | %.0f, %.0f, %.1f ms | – |\n",
			s.backlogRelayBatch, s.backlogConsumerBatch, s.backlogTx)
	}
	return sb.String()
}
