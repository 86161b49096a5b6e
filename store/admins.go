package store

import (
	"context"
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

func scanAdmin(row pgx.Row) (contract.AdminAccount, error) {
	var a contract.AdminAccount
	err := row.Scan(accountDest(&a)...)
	return a, err
}

// CreateAdminAccount inserts an account with a fresh id. contract.ErrConflict when the
// username is taken.
func (s *Store) CreateAdminAccount(ctx context.Context, n contract.NewAdminAccount) (contract.AdminAccount, error) {
	a, err := scanAdmin(s.pool.QueryRow(ctx,
		`INSERT INTO admins AS a (id, username, password_hash, role, must_change_password, created_at, password_changed_at)
		 VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING `+accountColumns,
		contract.NewID(), n.Username, n.PasswordHash, n.Role, n.MustChangePassword, n.Now))
	if err != nil {
		return contract.AdminAccount{}, fmt.Errorf("insert admin %q: %w", n.Username, translate(err))
	}
	return a, nil
}

// AdminAccountByUsername reads one account by its (lowercase) username. contract.ErrNotFound
// when there is none.
func (s *Store) AdminAccountByUsername(ctx context.Context, username string) (contract.AdminAccount, error) {
	a, err := scanAdmin(s.pool.QueryRow(ctx, `SELECT `+accountColumns+` FROM admins a WHERE username = $1`, username))
	if err != nil {
		return contract.AdminAccount{}, fmt.Errorf("select admin %q: %w", username, translate(err))
	}
	return a, nil
}

// AdminAccount reads one account by id. contract.ErrNotFound when there is none.
func (s *Store) AdminAccount(ctx context.Context, id string) (contract.AdminAccount, error) {
	if err := checkID("admin", id); err != nil {
		return contract.AdminAccount{}, err
	}
	a, err := scanAdmin(s.pool.QueryRow(ctx, `SELECT `+accountColumns+` FROM admins a WHERE id = $1`, id))
	if err != nil {
		return contract.AdminAccount{}, fmt.Errorf("select admin %s: %w", id, translate(err))
	}
	return a, nil
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
