package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/jackc/pgx/v5"
)

// accountColumns are an account's columns on admins aliased a, read by accountDest.
const accountColumns = `a.id, a.username, a.password_hash, a.role, a.must_change_password, a.disabled, a.created_at, a.password_changed_at`

// accountDest are the scan destinations of accountColumns; the id is decoded as it is scanned.
func accountDest(a *contract.AdminAccount) []any {
	return []any{hexIDInto(&a.ID), &a.Username, &a.PasswordHash, &a.Role, &a.MustChangePassword, &a.Disabled, &a.CreatedAt, &a.PasswordChangedAt}
}

func scanAdmin(row pgx.CollectableRow) (contract.AdminAccount, error) {
	var a contract.AdminAccount
	err := row.Scan(accountDest(&a)...)
	return a, err
}

// CreateAdminAccount inserts an account with a fresh id. contract.ErrConflict when the
// username is taken.
func (s *Store) CreateAdminAccount(ctx context.Context, n contract.NewAdminAccount) (contract.AdminAccount, error) {
	return one(ctx, s.pool, fmt.Sprintf("insert admin %q", n.Username), scanAdmin,
		`INSERT INTO admins AS a (id, username, password_hash, role, must_change_password, created_at, password_changed_at)
		 VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING `+accountColumns,
		contract.NewID(), n.Username, n.PasswordHash, n.Role, n.MustChangePassword, n.Now)
}

// AdminAccountByUsername reads one account by its (lowercase) username. contract.ErrNotFound
// when there is none.
func (s *Store) AdminAccountByUsername(ctx context.Context, username string) (contract.AdminAccount, error) {
	return one(ctx, s.pool, fmt.Sprintf("select admin %q", username), scanAdmin,
		`SELECT `+accountColumns+` FROM admins a WHERE username = $1`, username)
}

// AdminAccount reads one account by id. contract.ErrNotFound when there is none.
func (s *Store) AdminAccount(ctx context.Context, id string) (contract.AdminAccount, error) {
	if err := checkID("admin", id); err != nil {
		return contract.AdminAccount{}, err
	}
	return one(ctx, s.pool, "select admin "+id, scanAdmin, `SELECT `+accountColumns+` FROM admins a WHERE id = $1`, id)
}

// AdminAccounts reads every account, by username.
func (s *Store) AdminAccounts(ctx context.Context) ([]contract.AdminAccount, error) {
	return collect(ctx, s.pool, "select admins", scanAdmin, `SELECT `+accountColumns+` FROM admins a ORDER BY username`)
}

// SetAdminPassword replaces an account's password hash and must_change_password and, in the
// same transaction, revokes every session of the account.
func (s *Store) SetAdminPassword(ctx context.Context, id, passwordHash string, mustChange bool, now time.Time) error {
	if err := checkID("admin", id); err != nil {
		return err
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if err := update(ctx, tx, "admin", id,
			`UPDATE admins SET password_hash = $2, must_change_password = $3, password_changed_at = $4 WHERE id = $1`,
			id, passwordHash, mustChange, now); err != nil {
			return err
		}
		return revokeAdminSessions(ctx, tx, id, now)
	})
}

// SetAdminDisabled disables or enables an account; disabling also revokes its sessions, in the
// same transaction.
func (s *Store) SetAdminDisabled(ctx context.Context, id string, disabled bool, now time.Time) error {
	if err := checkID("admin", id); err != nil {
		return err
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if err := update(ctx, tx, "admin", id, `UPDATE admins SET disabled = $2 WHERE id = $1`, id, disabled); err != nil || !disabled {
			return err
		}
		return revokeAdminSessions(ctx, tx, id, now)
	})
}

// SetAdminRole changes an account's role. Its sessions stay: each request reads the role
// afresh, so the change applies to the next one.
func (s *Store) SetAdminRole(ctx context.Context, id, role string) error {
	if err := checkID("admin", id); err != nil {
		return err
	}
	return update(ctx, s.pool, "admin", id, `UPDATE admins SET role = $2 WHERE id = $1`, id, role)
}

// tokenSelect reads tokens (t) with their owners (a); scanAdminToken reads one of its rows.
const tokenSelect = `SELECT t.id, t.hash, t.name, t.role, t.created_at, t.expires_at, t.last_used_at, t.revoked_at, ` +
	accountColumns + ` FROM admin_tokens t JOIN admins a ON a.id = t.admin_id`

func scanAdminToken(row pgx.CollectableRow) (contract.AdminToken, error) {
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
	if err := exec(ctx, s.pool, fmt.Sprintf("insert admin token %q", n.Name),
		`INSERT INTO admin_tokens (id, hash, name, admin_id, role, created_at, expires_at)
		 VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		id, n.Hash, n.Name, n.AdminID, n.Role, n.Now, n.ExpiresAt); err != nil {
		return contract.AdminToken{}, err
	}
	return s.AdminToken(ctx, id)
}

// AdminToken reads one token and its owner by id, whatever its state. contract.ErrNotFound
// when there is none.
func (s *Store) AdminToken(ctx context.Context, id string) (contract.AdminToken, error) {
	if err := checkID("admin token", id); err != nil {
		return contract.AdminToken{}, err
	}
	return one(ctx, s.pool, "select admin token "+id, scanAdminToken, tokenSelect+` WHERE t.id = $1`, id)
}

// AdminTokenByHash reads the token whose secret hashes to hash, whatever its state: the caller
// decides whether it is still valid. contract.ErrNotFound when there is none.
func (s *Store) AdminTokenByHash(ctx context.Context, hash []byte) (contract.AdminToken, error) {
	return one(ctx, s.pool, "select admin token", scanAdminToken, tokenSelect+` WHERE t.hash = $1`, hash)
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

// CreateAdminSession records a session.
func (s *Store) CreateAdminSession(ctx context.Context, n contract.NewAdminSession) error {
	if len(n.ID) != 32 {
		return errors.New("session id must be 32 bytes (a SHA-256)")
	}
	return exec(ctx, s.pool, "insert admin session",
		`INSERT INTO admin_sessions (id, admin_id, created_at, last_seen_at, expires_at, user_agent, client_ip)
		 VALUES ($1, $2, $3, $3, $4, $5, $6)`,
		n.ID, n.AdminID, n.Now, n.ExpiresAt, n.UserAgent, n.ClientIP)
}

// AdminSession reads a session and its account, whatever its state: the caller decides whether
// it is still valid. contract.ErrNotFound when there is none.
func (s *Store) AdminSession(ctx context.Context, id []byte) (contract.AdminSession, error) {
	return one(ctx, s.pool, "select admin session", func(r pgx.CollectableRow) (se contract.AdminSession, err error) {
		err = r.Scan(append([]any{&se.ID, &se.CreatedAt, &se.LastSeenAt, &se.ExpiresAt, &se.RevokedAt, &se.UserAgent, &se.ClientIP},
			accountDest(&se.Admin)...)...)
		return se, err
	}, `SELECT s.id, s.created_at, s.last_seen_at, s.expires_at, s.revoked_at, s.user_agent, s.client_ip, `+accountColumns+`
		 FROM admin_sessions s JOIN admins a ON a.id = s.admin_id WHERE s.id = $1`, id)
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
	return affected(ctx, s.pool, "delete stale admin sessions",
		`DELETE FROM admin_sessions WHERE expires_at < $1 OR revoked_at < $1`, cutoff)
}
