package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/acv/acv/api/contract"
)

// CreateProject inserts an enabled project with a fresh time-ordered id and returns it as the
// API shows it (without statistics: a new project has no codes).
func (s *Store) CreateProject(ctx context.Context, p contract.NewProject) (contract.Project, error) {
	id := contract.NewID()
	var createdAt time.Time
	err := s.pool.QueryRow(ctx,
		`INSERT INTO projects (id, name, description, expires_at) VALUES ($1, $2, $3, $4)
		 RETURNING created_at`,
		id, p.Name, p.Description, toTime(p.ExpiresAt)).Scan(&createdAt)
	if err != nil {
		return contract.Project{}, fmt.Errorf("insert project: %w", translate(err))
	}
	return contract.Project{
		ID:          id,
		Name:        p.Name,
		Description: p.Description,
		Status:      true,
		ExpiresAt:   p.ExpiresAt,
		CreatedAt:   createdAt.Unix(),
	}, nil
}

// Project reads one project without its statistics (see Statistics), so callers that only need
// the flags, such as the cache loader, pay nothing for counting.
func (s *Store) Project(ctx context.Context, id string) (contract.Project, error) {
	if err := checkID("project", id); err != nil {
		return contract.Project{}, err
	}
	var (
		p         contract.Project
		pid       pgtype.UUID
		expiresAt *time.Time
		createdAt time.Time
	)
	err := s.pool.QueryRow(ctx,
		`SELECT id, name, description, enabled, expires_at, created_at FROM projects WHERE id = $1`,
		id).Scan(&pid, &p.Name, &p.Description, &p.Status, &expiresAt, &createdAt)
	if err != nil {
		return contract.Project{}, fmt.Errorf("select project %s: %w", id, translate(err))
	}
	p.ID = hexID(pid)
	p.ExpiresAt = toUnix(expiresAt)
	p.CreatedAt = createdAt.Unix()
	return p, nil
}

// ProjectState reads a project's flags (enabled, expiry) and the version of its row, which
// every change of the flags increments: the hot path keeps copies of the flags in Redis, and a
// copy is replaced only by one of a newer version.
func (s *Store) ProjectState(ctx context.Context, id string) (contract.Project, int64, error) {
	if err := checkID("project", id); err != nil {
		return contract.Project{}, 0, err
	}
	var (
		p         = contract.Project{ID: id}
		expiresAt *time.Time
		version   int64
	)
	err := s.pool.QueryRow(ctx, `SELECT enabled, expires_at, version FROM projects WHERE id = $1`, id).
		Scan(&p.Status, &expiresAt, &version)
	if err != nil {
		return contract.Project{}, 0, fmt.Errorf("select project %s: %w", id, translate(err))
	}
	p.ExpiresAt = toUnix(expiresAt)
	return p, version, nil
}

// SetProjectEnabled enables or disables a project, as a new version of its row. The caller
// also updates Redis: verify reads the flag there.
func (s *Store) SetProjectEnabled(ctx context.Context, id string, enabled bool) error {
	if err := checkID("project", id); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `UPDATE projects SET enabled = $2, version = version + 1 WHERE id = $1`, id, enabled)
	if err != nil {
		return fmt.Errorf("update project %s enabled: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("project %s: %w", id, contract.ErrNotFound)
	}
	return nil
}

// SetProjectExpiry sets (or, with nil, clears) a project's expiry, as a new version of its row.
// Statistics need no update: they apply the project's expiry to open codes at read time.
func (s *Store) SetProjectExpiry(ctx context.Context, id string, expiresAt *int64) error {
	if err := checkID("project", id); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `UPDATE projects SET expires_at = $2, version = version + 1 WHERE id = $1`, id, toTime(expiresAt))
	if err != nil {
		return fmt.Errorf("update project %s expiry: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("project %s: %w", id, contract.ErrNotFound)
	}
	return nil
}
