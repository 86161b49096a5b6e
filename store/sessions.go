package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/acv/acv/api/contract"
)

// CreateAdminSession records a session.
func (s *Store) CreateAdminSession(ctx context.Context, n contract.NewAdminSession) error {
	if len(n.ID) != 32 {
		return errors.New("session id must be 32 bytes (a SHA-256)")
	}
	_, err := s.pool.Exec(ctx,
		`INSERT INTO admin_sessions (id, admin_id, created_at, last_seen_at, expires_at, user_agent, client_ip)
		 VALUES ($1, $2, $3, $3, $4, $5, $6)`,
		n.ID, n.AdminID, n.Now, n.ExpiresAt, n.UserAgent, n.ClientIP)
	if err != nil {
		return fmt.Errorf("insert admin session: %w", translate(err))
	}
	return nil
}

// AdminSession reads a session and its account by the session's id, whatever its state: the
// caller decides whether it is still valid (expiry, idle time, revocation, the account
// disabled). contract.ErrNotFound when there is none.
func (s *Store) AdminSession(ctx context.Context, id []byte) (contract.AdminSession, error) {
	var se contract.AdminSession
	err := s.pool.QueryRow(ctx,
		`SELECT s.id, s.created_at, s.last_seen_at, s.expires_at, s.revoked_at, s.user_agent, s.client_ip, `+accountColumns+`
		 FROM admin_sessions s JOIN admins a ON a.id = s.admin_id WHERE s.id = $1`, id).
		Scan(append([]any{&se.ID, &se.CreatedAt, &se.LastSeenAt, &se.ExpiresAt, &se.RevokedAt, &se.UserAgent, &se.ClientIP},
			accountDest(&se.Admin)...)...)
	if err != nil {
		return contract.AdminSession{}, fmt.Errorf("select admin session: %w", translate(err))
	}
	return se, nil
}

// TouchAdminSession moves a session's last_seen_at to now, which keeps it from idling out.
func (s *Store) TouchAdminSession(ctx context.Context, id []byte, now time.Time) error {
	return exec(ctx, s.pool, "touch admin session",
		`UPDATE admin_sessions SET last_seen_at = $2 WHERE id = $1 AND last_seen_at < $2`, id, now)
}

// RevokeAdminSession ends one session (logout). Revoking one already revoked changes nothing.
func (s *Store) RevokeAdminSession(ctx context.Context, id []byte, now time.Time) error {
	return exec(ctx, s.pool, "revoke admin session",
		`UPDATE admin_sessions SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL`, id, now)
}

func revokeAdminSessions(ctx context.Context, q execer, adminID string, now time.Time) error {
	return exec(ctx, q, "revoke sessions of admin "+adminID,
		`UPDATE admin_sessions SET revoked_at = $2 WHERE admin_id = $1 AND revoked_at IS NULL`, adminID, now)
}

// DeleteStaleAdminSessions removes sessions that expired or were revoked before cutoff: they
// can no longer be used, and keeping them a while only helps an investigation.
func (s *Store) DeleteStaleAdminSessions(ctx context.Context, cutoff time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx,
		`DELETE FROM admin_sessions WHERE expires_at < $1 OR revoked_at < $1`, cutoff)
	if err != nil {
		return 0, fmt.Errorf("delete stale admin sessions: %w", translate(err))
	}
	return tag.RowsAffected(), nil
}
