package faults_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/audit"
	"github.com/acv/acv/cache"
)

// onceResult compares the codes that must have exactly one success row with the rows there are.
type onceResult struct {
	// Want is how many codes must have one success row; Logged how many have exactly one.
	Want, Logged int
	// Rows is the number of success rows of the project.
	Rows int
	// Missing are wanted codes without a success row, Duplicated codes with more than one,
	// Unexpected codes with a row that no verify redeemed.
	Missing, Duplicated, Unexpected []string
}

func (r onceResult) ok() bool {
	return r.Logged == r.Want && len(r.Missing)+len(r.Duplicated)+len(r.Unexpected) == 0
}

func (r onceResult) String() string {
	return fmt.Sprintf("%d of %d redeemed codes logged exactly once, %d success rows; %d missing %s, %d duplicated %s, %d never redeemed %s",
		r.Logged, r.Want, r.Rows, len(r.Missing), sample(r.Missing), len(r.Duplicated), sample(r.Duplicated),
		len(r.Unexpected), sample(r.Unexpected))
}

// sample names a few of ids, for a message.
func sample(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	s := append([]string(nil), ids...)
	sort.Strings(s)
	if len(s) > 5 {
		s = append(s[:5], "…")
	}
	return "(" + strings.Join(s, ", ") + ")"
}

// exactlyOnce is the check every fault test ends with: each code in want (code ids) has
// exactly one success row in rows (success rows by code id), and no other code has any.
func exactlyOnce(want map[string]bool, rows map[string]int) onceResult {
	r := onceResult{Want: len(want)}
	for id := range want {
		switch n := rows[id]; {
		case n == 0:
			r.Missing = append(r.Missing, id)
		case n == 1:
			r.Logged++
		default:
			r.Duplicated = append(r.Duplicated, id)
		}
	}
	for id, n := range rows {
		r.Rows += n
		if !want[id] {
			r.Unexpected = append(r.Unexpected, id)
		}
	}
	return r
}

// successRows counts the success rows of verifies in verification_logs by code id (32 hex
// digits, as the service writes ids), for one project.
func successRows(ctx context.Context, pool *pgxpool.Pool, projectID string) (map[string]int, error) {
	rows, err := pool.Query(ctx, `
		SELECT code_id::text, count(*) FROM verification_logs
		WHERE project_id = $1 AND action = $2 AND result = $3
		GROUP BY code_id`, projectID, string(contract.ActionVerify), contract.ResultSuccess)
	if err != nil {
		return nil, fmt.Errorf("count success rows: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, err
		}
		out[strings.ReplaceAll(id, "-", "")] = n
	}
	return out, rows.Err()
}

// countSuccessRows is the number of success rows of the project, the cheap poll of a drain.
func countSuccessRows(ctx context.Context, pool *pgxpool.Pool, projectID string, codeIDs []string) (int, error) {
	q := `SELECT count(*) FROM verification_logs WHERE project_id = $1 AND action = $2 AND result = $3`
	args := []any{projectID, string(contract.ActionVerify), contract.ResultSuccess}
	if codeIDs != nil {
		q += ` AND code_id = ANY($4::uuid[])`
		args = append(args, codeIDs)
	}
	var n int
	err := pool.QueryRow(ctx, q, args...).Scan(&n)
	return n, err
}

// unapplied counts the codes among ids whose row in codes still has no verified_at: the
// consumer applies each event's state along with its log row.
func unapplied(ctx context.Context, pool *pgxpool.Pool, ids []string) (int, error) {
	var n int
	err := pool.QueryRow(ctx, `SELECT count(*) FROM codes WHERE id = ANY($1::uuid[]) AND verified_at IS NULL`, ids).Scan(&n)
	return n, err
}

// outboxLength is the number of entries in the outboxes (the previous format's streams
// included): events not yet published, and events published and not yet removed.
func outboxLength(ctx context.Context, rdb redis.UniversalClient) (int64, error) {
	n, _, err := audit.OutboxLen(ctx, rdb, cache.Outboxes())
	return n, err
}

// outboxWatch samples the outbox's length every 200 ms until stopped, keeping its peak.
type outboxWatch struct {
	mu     sync.Mutex
	peak   int64
	peakAt time.Time
	stop   chan struct{}
	done   chan struct{}
}

func watchOutbox(t *testing.T, d *deployment) *outboxWatch {
	w := &outboxWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			n, err := outboxLength(ctx, d.s.Deps.Redis)
			cancel()
			if err == nil {
				w.mu.Lock()
				if n > w.peak {
					w.peak, w.peakAt = n, time.Now()
				}
				w.mu.Unlock()
			}
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(w.halt)
	return w
}

func (w *outboxWatch) halt() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// max is the largest outbox length seen, and when.
func (w *outboxWatch) max() (int64, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peak, w.peakAt
}

// waitLogged waits until every code in values has its success row and returns how long after
// since that was: the time the pipeline needed to catch up with what was acknowledged.
func (d *deployment) waitLogged(values []string, since time.Time, within time.Duration) time.Duration {
	d.t.Helper()
	ids := make([]string, len(values))
	for i, v := range values {
		ids[i] = d.codeIDs[v]
	}
	start := time.Now()
	for {
		n, err := countSuccessRows(context.Background(), d.s.Deps.Store.Pool(), d.projectID, ids)
		if err == nil && n >= len(ids) {
			return time.Since(since)
		}
		if time.Since(start) > within {
			d.t.Fatalf("%s later, %d of %d acknowledged verifies are logged (%v)", within, n, len(ids), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// figures is what a fault test saw once the pipeline drained.
type figures struct {
	// Acked verifies were answered success=true; Unanswered were sent without an answer, of
	// which Redis redeemed Redeemed (their success rows are owed too).
	Acked, Unanswered, Redeemed int
	// Retries are the attempts the clients sent again (no answer, or a 503).
	Retries int64
	Once    onceResult
	// Unapplied are logged codes whose row in codes has no verified_at.
	Unapplied int
	// KafkaMessages are the messages on the topic (all consumed: the group's lag is 0 once
	// drained), KafkaEvents the distinct events the sink stored from them: the difference is
	// what the relay published twice and the sink stored once.
	KafkaMessages, KafkaEvents int
	// Drained is how long after the load stopped the outbox was empty, nothing pending, and
	// every owed row written; DrainedAt when.
	Drained   time.Duration
	DrainedAt time.Time
}

func (f figures) String() string {
	return fmt.Sprintf("acked %d, unanswered %d (redeemed %d), client retries %d, success rows %d, logged once %d, duplicate rows %d, missing %d; kafka messages %d for %d events (%d published twice, removed by the sink); drained %s after the load",
		f.Acked, f.Unanswered, f.Redeemed, f.Retries, f.Once.Rows, f.Once.Logged, len(f.Once.Duplicated), len(f.Once.Missing),
		f.KafkaMessages, f.KafkaEvents, f.KafkaMessages-f.KafkaEvents, f.Drained.Round(time.Millisecond))
}

// settle stops the load, waits for the pipeline to drain (outbox empty, nothing pending in the
// relay group, every owed row written) and asserts exactly once: every acknowledged verify, and
// every unanswered one Redis redeemed, has exactly one success row; no other code has one; the
// logged codes carry their state; no outbox entry is left. It returns the figures.
func (d *deployment) settle(l *load) figures {
	d.t.Helper()
	l.finish()
	ctx := context.Background()
	stopped := time.Now()
	f := figures{}
	want := map[string]bool{}
	l.mu.Lock()
	acked, unanswered := append([]string(nil), l.acked...), append([]string(nil), l.unanswered...)
	l.mu.Unlock()
	for _, v := range acked {
		want[d.codeIDs[v]] = true
	}
	f.Acked, f.Unanswered, f.Retries = len(acked), len(unanswered), d.retries.Load()
	for _, v := range unanswered {
		rec, found, err := d.s.Deps.Cache.LiveCode(ctx, d.projectID, v)
		if err != nil {
			d.t.Fatalf("read %s from redis: %v", v, err)
		}
		if found && rec.VerifiedAtMs != 0 {
			want[d.codeIDs[v]] = true
			f.Redeemed++
		}
	}

	pool := d.s.Deps.Store.Pool()
	var length, lag int64
	var rows int
	var err error
	deadline := stopped.Add(2 * time.Minute)
	for {
		length, err = outboxLength(ctx, d.s.Deps.Redis)
		if err == nil {
			rows, err = countSuccessRows(ctx, pool, d.projectID, nil)
		}
		if err == nil && length == 0 && rows >= len(want) {
			// The sink has every owed row; the group commits its last batch right after.
			lag, err = d.groupLag(ctx)
			if err == nil && lag == 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			d.t.Errorf("not drained 2 minutes after the load stopped: outbox %d entries, %d of %d success rows, consumer lag %d (%v)",
				length, rows, len(want), lag, err)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	f.DrainedAt = time.Now()
	f.Drained = f.DrainedAt.Sub(stopped)
	// Rows still in flight would show as missing: give a straggler a moment, then count.
	time.Sleep(500 * time.Millisecond)
	got, err := successRows(ctx, pool, d.projectID)
	if err != nil {
		d.t.Fatal(err)
	}
	f.Once = exactlyOnce(want, got)
	if !f.Once.ok() {
		d.t.Errorf("not exactly once: %s", f.Once)
	}
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	if f.Unapplied, err = unapplied(ctx, pool, ids); err != nil {
		d.t.Fatal(err)
	} else if f.Unapplied > 0 {
		d.t.Errorf("%d logged codes have no verified_at in PostgreSQL", f.Unapplied)
	}
	if length, err = outboxLength(ctx, d.s.Deps.Redis); err != nil || length != 0 {
		d.t.Errorf("outbox after the drain: %d entries (%v)", length, err)
	}
	// Every message on the topic was consumed (the lag is 0), and the sink stored each event
	// once: the difference is what the relay published twice.
	if n, err := topicMessages(ctx, d.brokers(), d.topic()); err != nil {
		d.t.Errorf("count the topic's messages: %v", err)
	} else {
		f.KafkaMessages = int(n)
	}
	if f.KafkaEvents, err = projectRows(ctx, pool, d.projectID); err != nil {
		d.t.Fatal(err)
	}
	return f
}

// topicMessages counts the messages on the topic from its partitions' offsets: the relay's
// writer is neither transactional nor idempotent, so every offset holds one message.
func topicMessages(ctx context.Context, brokers []string, topic string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	tr := &kafka.Transport{DialTimeout: 3 * time.Second, MetadataTTL: time.Second}
	defer tr.CloseIdleConnections()
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second, Transport: tr}
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return 0, fmt.Errorf("metadata: %w", err)
	}
	if len(md.Topics) != 1 || md.Topics[0].Error != nil {
		return 0, fmt.Errorf("metadata of %s: %+v", topic, md.Topics)
	}
	var reqs []kafka.OffsetRequest
	for _, p := range md.Topics[0].Partitions {
		reqs = append(reqs, kafka.FirstOffsetOf(p.ID), kafka.LastOffsetOf(p.ID))
	}
	offs, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return 0, fmt.Errorf("list offsets: %w", err)
	}
	var n int64
	for _, po := range offs.Topics[topic] {
		if po.Error != nil {
			return 0, fmt.Errorf("offsets of partition %d: %w", po.Partition, po.Error)
		}
		n += po.LastOffset - po.FirstOffset
	}
	return n, nil
}

// groupLag is how many messages of the topic the consumer group has not committed.
func (d *deployment) groupLag(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	lag, err := audit.GroupLag(ctx, d.brokers(), d.topic(), d.group())
	var n int64
	for _, l := range lag {
		n += l
	}
	return n, err
}

// projectRows counts every verification log of the project, whatever its action and result:
// the distinct events the sink stored.
func projectRows(ctx context.Context, pool *pgxpool.Pool, projectID string) (int, error) {
	var n int
	err := pool.QueryRow(ctx, `SELECT count(*) FROM verification_logs WHERE project_id = $1`, projectID).Scan(&n)
	return n, err
}
