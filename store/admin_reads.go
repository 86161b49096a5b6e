package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/acv/acv/api/contract"
)

// Reads for the operator commands (acv project list, acv key list): never on the API's path.

// Projects reads every project, oldest first, without statistics.
func (s *Store) Projects(ctx context.Context) ([]contract.Project, error) {
	rows, err := s.pool.Query(ctx,
		`SELECT id, name, description, enabled, expires_at, created_at FROM projects ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("select projects: %w", translate(err))
	}
	ps, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (contract.Project, error) {
		var (
			p         contract.Project
			pid       pgtype.UUID
			expiresAt *time.Time
			createdAt time.Time
		)
		if err := r.Scan(&pid, &p.Name, &p.Description, &p.Status, &expiresAt, &createdAt); err != nil {
			return p, err
		}
		p.ID, p.ExpiresAt, p.CreatedAt = hexID(pid), toUnix(expiresAt), createdAt.Unix()
		return p, nil
	})
	if err != nil {
		return nil, fmt.Errorf("select projects: %w", translate(err))
	}
	return ps, nil
}

// ProjectAPIKeys reads the keys of a project, oldest first, without their secrets.
// contract.ErrNotFound when the project does not exist.
func (s *Store) ProjectAPIKeys(ctx context.Context, projectID string) ([]contract.KeyInfo, error) {
	if _, err := s.Project(ctx, projectID); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx,
		`SELECT id, project_id, revoked_at, coalesce(rate_per_sec, 0), coalesce(burst, 0), created_at, last_used_at
		 FROM api_keys WHERE project_id = $1 ORDER BY created_at, id`, projectID)
	if err != nil {
		return nil, fmt.Errorf("select api keys of project %s: %w", projectID, translate(err))
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (contract.KeyInfo, error) {
		var (
			k         contract.KeyInfo
			kid, pid  pgtype.UUID
			revokedAt *time.Time
			createdAt time.Time
			lastUsed  *time.Time
		)
		if err := r.Scan(&kid, &pid, &revokedAt, &k.RatePerSec, &k.Burst, &createdAt, &lastUsed); err != nil {
			return k, err
		}
		k.ID, k.ProjectID = hexID(kid), hexID(pid)
		k.RevokedAt, k.Revoked, k.CreatedAt = toUnix(revokedAt), revokedAt != nil, createdAt.Unix()
		k.LastUsedAt = toUnix(lastUsed)
		return k, nil
	})
	if err != nil {
		return nil, fmt.Errorf("select api keys of project %s: %w", projectID, translate(err))
	}
	return keys, nil
}
