package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestTranslate: each driver error becomes the contract's refusal of its kind, with the cause
// still in the chain: no rows is not found, a unique violation a conflict, and a server that
// is starting up, shutting down, out of connections or unreachable is unavailable (503).
func TestTranslate(t *testing.T) {
	pgErr := func(code, msg string) error { return &pgconn.PgError{Severity: "FATAL", Code: code, Message: msg} }
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, tc := range []struct {
		name string
		err  error
		kind contract.Kind // "" = left as it is
	}{
		{"no rows", pgx.ErrNoRows, contract.KindNotFound},
		{"unique violation", pgErr("23505", "duplicate key value violates unique constraint"), contract.KindConflict},
		{"foreign key violation", pgErr("23503", "insert or update violates foreign key constraint"), contract.KindNotFound},

		{"starting up", pgErr("57P03", "the database system is starting up"), contract.KindUnavailable},
		{"shutting down", pgErr("57P03", "the database system is shutting down"), contract.KindUnavailable},
		{"standby not accepting connections", pgErr("57P03", "the database system is not accepting connections"), contract.KindUnavailable},
		{"admin shutdown", pgErr("57P01", "terminating connection due to administrator command"), contract.KindUnavailable},
		{"crash shutdown", pgErr("57P02", "terminating connection because of crash of another server process"), contract.KindUnavailable},
		{"too many connections", pgErr("53300", "sorry, too many clients already"), contract.KindUnavailable},
		{"connection exception", pgErr("08006", "connection failure"), contract.KindUnavailable},
		{"connection does not exist", pgErr("08003", "connection does not exist"), contract.KindUnavailable},
		{"starting up, wrapped", fmt.Errorf("select project: %w", pgErr("57P03", "the database system is starting up")), contract.KindUnavailable},
		{"dial refused", refusedConnect(t), contract.KindUnavailable},
		{"refused", dial, contract.KindUnavailable},
		{"closed under a query", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), contract.KindUnavailable},

		{"nil", nil, ""},
		{"syntax error", pgErr("42601", "syntax error at or near"), ""},
		{"password refused", pgErr("28P01", "password authentication failed for user"), ""},
		{"query canceled by statement timeout", pgErr("57014", "canceling statement due to statement timeout"), ""},
		{"our own fault", errors.New("scan code: unexpected column"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := translate(tc.err)
			if tc.kind == "" {
				if got != tc.err {
					t.Fatalf("translate(%v) = %v, want it unchanged", tc.err, got)
				}
				return
			}
			if k := contract.KindOf(got); k != tc.kind {
				t.Fatalf("translate(%v): kind %q, want %q", tc.err, k, tc.kind)
			}
			if !errors.Is(got, tc.err) {
				t.Fatalf("translate(%v) = %v: the cause is not in the chain", tc.err, got)
			}
		})
	}
}

// refusedConnect is the error pgx reports when nothing listens where the server should be.
func refusedConnect(t *testing.T) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().(*net.TCPAddr)
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = pgconn.Connect(ctx, fmt.Sprintf("postgres://acv@127.0.0.1:%d/acv?sslmode=disable", addr.Port))
	var ce *pgconn.ConnectError
	if !errors.As(err, &ce) {
		t.Fatalf("connect to a closed port: %T %v, want a *pgconn.ConnectError", err, err)
	}
	return err
}
