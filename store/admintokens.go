package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/jackc/pgx/v5"
)

// tokenSelect reads tokens (t) with their owners (a); scanAdminToken reads one of its rows.
const tokenSelect = `SELECT t.id, t.hash, t.name, t.role, t.created_at, t.expires_at, t.last_used_at, t.revoked_at, ` +
	accountColumns + ` FROM admin_tokens t JOIN admins a ON a.id = t.admin_id`

func scanAdminToken(row pgx.Row) (contract.AdminToken, error) {
	var t contract.AdminToken
	err := row.Scan(append([]any{hexIDInto(&t.ID), &t.Hash, &t.Name, &t.Role, &t.CreatedAt, &t.ExpiresAt, &t.LastUsedAt, &t.RevokedAt},
		accountDest(&t.Admin)...)...)
	return t, err
}

// CreateAdminToken records a token with a fresh id and returns it with its owner.
func (s *Store) CreateAdminToken(ctx context.Context, n contract.NewAdminToken) (contract.AdminToken, error) {
	if len(n.Hash) != 32 {
		return contract.AdminToken{}, errors.New("token hash must be 32 bytes (a SHA-256)")
	}
	if err := checkID("admin", n.AdminID); err != nil {
		return contract.AdminToken{}, err
	}
	id := contract.NewID()
	if _, err := s.pool.Exec(ctx,
		`INSERT INTO admin_tokens (id, hash, name, admin_id, role, created_at, expires_at)
		 VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		id, n.Hash, n.Name, n.AdminID, n.Role, n.Now, n.ExpiresAt); err != nil {
		return contract.AdminToken{}, fmt.Errorf("insert admin token %q: %w", n.Name, translate(err))
	}
	return s.AdminToken(ctx, id)
}

// AdminToken reads one token and its owner by id, whatever its state. contract.ErrNotFound
// when there is none.
func (s *Store) AdminToken(ctx context.Context, id string) (contract.AdminToken, error) {
	if err := checkID("admin token", id); err != nil {
		return contract.AdminToken{}, err
	}
	t, err := scanAdminToken(s.pool.QueryRow(ctx, tokenSelect+` WHERE t.id = $1`, id))
	if err != nil {
		return contract.AdminToken{}, fmt.Errorf("select admin token %s: %w", id, translate(err))
	}
	return t, nil
}

// AdminTokenByHash reads the token whose secret hashes to hash, whatever its state: the caller
// decides whether it is still valid. contract.ErrNotFound when there is none.
func (s *Store) AdminTokenByHash(ctx context.Context, hash []byte) (contract.AdminToken, error) {
	t, err := scanAdminToken(s.pool.QueryRow(ctx, tokenSelect+` WHERE t.hash = $1`, hash))
	if err != nil {
		return contract.AdminToken{}, fmt.Errorf("select admin token: %w", translate(err))
	}
	return t, nil
}

// AdminTokens lists the tokens, newest first: every account's when adminID is "", else that
// account's only.
func (s *Store) AdminTokens(ctx context.Context, adminID string) ([]contract.AdminToken, error) {
	q, args := tokenSelect, []any{}
	if adminID != "" {
		if err := checkID("admin", adminID); err != nil {
			return nil, err
		}
		q, args = q+` WHERE t.admin_id = $1`, append(args, adminID)
	}
	return collect(ctx, s.pool, "select admin tokens", scanAdminToken, q+` ORDER BY t.created_at DESC, t.id DESC`, args...)
}

// TouchAdminToken moves a token's last_used_at to now, at most once a minute.
func (s *Store) TouchAdminToken(ctx context.Context, id string, now time.Time) error {
	return exec(ctx, s.pool, "touch admin token "+id,
		`UPDATE admin_tokens SET last_used_at = $2 WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2::timestamptz - interval '1 minute')`,
		id, now)
}

// RevokeAdminToken ends a token. Revoking one already revoked changes nothing;
// contract.ErrNotFound when there is no such token.
func (s *Store) RevokeAdminToken(ctx context.Context, id string, now time.Time) error {
	if err := checkID("admin token", id); err != nil {
		return err
	}
	return update(ctx, s.pool, "admin token", id, `UPDATE admin_tokens SET revoked_at = coalesce(revoked_at, $2) WHERE id = $1`, id, now)
}
