// Package store is the Postgres system of record: projects, API keys, codes, verification logs
// and exact per-project statistics. Redis (package cache) serves the hot path; this package holds
// the durable state it is loaded from. Its types are api/contract's, the only package of the
// project it imports.
package store

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"
)

// Store is the Postgres store. It is safe for concurrent use; every method borrows a
// connection from the pool for its duration.
type Store struct {
	pool *pgxpool.Pool
}

// Option adjusts how Open connects.
type Option func(*pgxpool.Config)

// WithTracer makes a span for every query, under the caller's span.
func WithTracer(tp trace.TracerProvider) Option {
	return func(c *pgxpool.Config) {
		c.ConnConfig.Tracer = otelpgx.NewTracer(otelpgx.WithTracerProvider(tp))
	}
}

// Open connects a pool to databaseURL and pings it, so a misconfigured URL fails at start-up
// rather than on the first request. It does not migrate: see Migrate.
func Open(ctx context.Context, databaseURL string, opts ...Option) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	for _, o := range opts {
		o(cfg)
	}
	after := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		registerHexUUID(conn.TypeMap())
		if after != nil {
			return after(ctx, conn)
		}
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("ping postgres: %w", err)
	}
	return &Store{pool: pool}, nil
}

// querier is what reads that run on the pool or inside a transaction need of either.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// execer is the pool, a connection or a transaction, for statements.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// collect runs a query and returns its rows read by scan; what names the read in an error.
func collect[T any](ctx context.Context, q querier, what string, scan pgx.RowToFunc[T], sql string, args ...any) ([]T, error) {
	out := []T{}
	err := each(ctx, q, what, scan, func(v T) error {
		out = append(out, v)
		return nil
	}, sql, args...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// each runs a query and hands its rows, read by scan, to fn one at a time, so a read of
// millions of rows holds one in memory; an error of fn stops it and is returned.
func each[T any](ctx context.Context, q querier, what string, scan pgx.RowToFunc[T], fn func(T) error, sql string, args ...any) error {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("%s: %w", what, translate(err))
	}
	defer rows.Close()
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return fmt.Errorf("%s: %w", what, translate(err))
		}
		if err := fn(v); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s: %w", what, translate(err))
	}
	return nil
}

// one runs a query of one row read by scan; what names the read in an error.
func one[T any](ctx context.Context, q querier, what string, scan pgx.RowToFunc[T], sql string, args ...any) (T, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err == nil {
		var v T
		if v, err = pgx.CollectExactlyOneRow(rows, scan); err == nil {
			return v, nil
		}
	}
	var zero T
	return zero, fmt.Errorf("%s: %w", what, translate(err))
}

// affected runs a statement and returns how many rows it changed; what names it in an error.
func affected(ctx context.Context, q execer, what, sql string, args ...any) (int64, error) {
	tag, err := q.Exec(ctx, sql, args...)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, translate(err))
	}
	return tag.RowsAffected(), nil
}

// exec runs a statement; what names it in an error.
func exec(ctx context.Context, q execer, what, sql string, args ...any) error {
	_, err := affected(ctx, q, what, sql, args...)
	return err
}

// update runs a statement on the row kind id: contract.ErrNotFound when it changed no row.
func update(ctx context.Context, q execer, kind, id, sql string, args ...any) error {
	n, err := affected(ctx, q, "update "+kind+" "+id, sql, args...)
	if err == nil && n == 0 {
		err = fmt.Errorf("%s %s: %w", kind, id, contract.ErrNotFound)
	}
	return err
}

// params are a query's parameters; bind adds one and returns its placeholder.
type params []any

func (p *params) bind(v any) string {
	*p = append(*p, v)
	return "$" + strconv.Itoa(len(*p))
}

// Close closes the pool, waiting for borrowed connections to be returned.
func (s *Store) Close() { s.pool.Close() }

// Ping checks that Postgres answers, for readiness probes.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("ping postgres: %w", err)
	}
	return nil
}

// Pool exposes the connection pool for callers that need raw access (tests, admin tooling).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// translate maps driver errors to the contract's refusals, keeping the original in the chain.
func translate(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: %w", contract.ErrNotFound, err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "23505": // unique_violation
			return fmt.Errorf("%w: %w", contract.ErrConflict, err)
		case pgErr.Code == "23503": // foreign_key_violation: the referenced row does not exist
			return fmt.Errorf("%w: %w", contract.ErrNotFound, err)
		case pgUnavailable(pgErr.Code):
			return contract.Unavailable(err)
		}
		// Any other answer of the server (a refused password, a bug in a query) is ours to fix.
		return err
	}
	if unreachable(err) {
		return contract.Unavailable(err)
	}
	return err
}

// pgUnavailable tells whether a SQLSTATE says the server cannot serve now, though it may soon:
// class 08, admin/crash shutdown, cannot_connect_now, too_many_connections.
func pgUnavailable(code string) bool {
	switch code {
	case "57P01", "57P02", "57P03", "53300":
		return true
	}
	return strings.HasPrefix(code, "08")
}

// unreachable tells whether err is a failure to reach the server or to keep talking to it.
func unreachable(err error) bool {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	return contract.ConnectionLost(err)
}

// retryable tells whether a transaction failed only because of a concurrent one and may simply
// be run again: deadlock_detected or serialization_failure.
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

// inTx runs fn in a transaction and commits it, running it again (a bounded number of times,
// with a short growing pause) when Postgres aborts it for a deadlock or serialization failure.
func (s *Store) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	const attempts = 8
	var err error
	for i := 0; i < attempts; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("%w (after %v)", ctx.Err(), err)
			case <-time.After(time.Duration(i*i) * 5 * time.Millisecond):
			}
		}
		err = pgx.BeginFunc(ctx, s.pool, fn)
		if err == nil || !retryable(err) {
			return err
		}
	}
	return fmt.Errorf("giving up after %d attempts: %w", attempts, err)
}

// checkID rejects a malformed id before it reaches SQL: no row can have it, so it is not found.
func checkID(kind, id string) error {
	if !contract.ValidID(id) {
		return fmt.Errorf("%s %q: %w", kind, id, contract.ErrNotFound)
	}
	return nil
}

// hexID renders a uuid column in the wire form: 32 lowercase hex characters.
func hexID(u pgtype.UUID) string { return hex.EncodeToString(u.Bytes[:]) }

// toTime and toUnix convert optional Unix seconds to and from timestamptz (nil = NULL).
func toTime(sec *int64) *time.Time {
	if sec == nil {
		return nil
	}
	t := time.Unix(*sec, 0)
	return &t
}

func toUnix(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	v := t.Unix()
	return &v
}

// positive is a limit parameter: NULL (unset or unlimited) when v is not positive.
func positive[T int | float64](v T) *T {
	if v <= 0 {
		return nil
	}
	return &v
}

// hexIDInto is a scan destination of a uuid column that keeps the id in *dst in the wire form.
func hexIDInto(dst *string) any { return hexIDDest{dst} }

type hexIDDest struct{ dst *string }

func (d hexIDDest) ScanUUID(u pgtype.UUID) error {
	*d.dst = hexID(u)
	return nil
}

// hexUUIDCodec is pgx's uuid codec, taught to send an id given as a string in the binary
// format: pgx's own plans fail on it first and retry as text, costly for the consumer's ids.
type hexUUIDCodec struct{ pgtype.UUIDCodec }

func (c hexUUIDCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if _, ok := value.(string); ok && format == pgtype.BinaryFormatCode {
		return encodeHexUUID{}
	}
	return c.UUIDCodec.PlanEncode(m, oid, format, value)
}

type encodeHexUUID struct{}

// Encode appends the 16 bytes of a uuid written as 32 hex digits, dashed or not. Anything else
// is an error, on which pgx tries the text format, whose parser words the refusal.
func (encodeHexUUID) Encode(value any, buf []byte) ([]byte, error) {
	s := value.(string)
	if len(s) == 36 && s[8] == '-' && s[13] == '-' && s[18] == '-' && s[23] == '-' {
		s = s[:8] + s[9:13] + s[14:18] + s[19:23] + s[24:]
	}
	var id [16]byte
	if len(s) != 32 {
		return nil, fmt.Errorf("uuid %q: not 32 hex digits", s)
	}
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		return nil, fmt.Errorf("uuid %q: %w", s, err)
	}
	return append(buf, id[:]...), nil
}

// registerHexUUID installs hexUUIDCodec for uuid and uuid[] in a type map.
func registerHexUUID(m *pgtype.Map) {
	t := &pgtype.Type{Name: "uuid", OID: pgtype.UUIDOID, Codec: hexUUIDCodec{}}
	m.RegisterType(t)
	m.RegisterType(&pgtype.Type{Name: "_uuid", OID: pgtype.UUIDArrayOID, Codec: &pgtype.ArrayCodec{ElementType: t}})
}
