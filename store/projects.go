package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/acv/acv/api/contract"
)

// CreateProject inserts an enabled project with a fresh time-ordered id and returns it as the
// API shows it (without statistics: a new project has no codes).
func (s *Store) CreateProject(ctx context.Context, p contract.NewProject) (contract.Project, error) {
	id := contract.NewID()
	createdAt, err := one(ctx, s.pool, "insert project", pgx.RowTo[time.Time],
		`INSERT INTO projects (id, name, description, expires_at) VALUES ($1, $2, $3, $4)
		 RETURNING created_at`,
		id, p.Name, p.Description, toTime(p.ExpiresAt))
	if err != nil {
		return contract.Project{}, err
	}
	return contract.Project{ID: id, Name: p.Name, Description: p.Description, Status: true,
		ExpiresAt: p.ExpiresAt, CreatedAt: createdAt.Unix()}, nil
}

const projectSelect = `SELECT id, name, description, enabled, expires_at, created_at FROM projects`

func scanProject(row pgx.CollectableRow) (contract.Project, error) {
	var (
		p         contract.Project
		expiresAt *time.Time
		createdAt time.Time
	)
	err := row.Scan(hexIDInto(&p.ID), &p.Name, &p.Description, &p.Status, &expiresAt, &createdAt)
	p.ExpiresAt, p.CreatedAt = toUnix(expiresAt), createdAt.Unix()
	return p, err
}

// Project reads one project without its statistics (see Statistics), so callers that only need
// the flags, such as the cache loader, pay nothing for counting.
func (s *Store) Project(ctx context.Context, id string) (contract.Project, error) {
	if err := checkID("project", id); err != nil {
		return contract.Project{}, err
	}
	return one(ctx, s.pool, "select project "+id, scanProject, projectSelect+` WHERE id = $1`, id)
}

// Projects reads every project, oldest first, without statistics.
func (s *Store) Projects(ctx context.Context) ([]contract.Project, error) {
	return collect(ctx, s.pool, "select projects", scanProject, projectSelect+` ORDER BY created_at, id`)
}

// ProjectState reads a project's flags and its row's version, which every change of them
// increments: Redis replaces its copy of the flags only by one of a newer version.
func (s *Store) ProjectState(ctx context.Context, id string) (contract.Project, int64, error) {
	if err := checkID("project", id); err != nil {
		return contract.Project{}, 0, err
	}
	var version int64
	p, err := one(ctx, s.pool, "select project "+id, func(r pgx.CollectableRow) (contract.Project, error) {
		p := contract.Project{ID: id}
		var expiresAt *time.Time
		err := r.Scan(&p.Status, &expiresAt, &version)
		p.ExpiresAt = toUnix(expiresAt)
		return p, err
	}, `SELECT enabled, expires_at, version FROM projects WHERE id = $1`, id)
	return p, version, err
}

// SetProjectEnabled enables or disables a project, as a new version of its row. The caller
// also updates Redis: verify reads the flag there.
func (s *Store) SetProjectEnabled(ctx context.Context, id string, enabled bool) error {
	if err := checkID("project", id); err != nil {
		return err
	}
	return update(ctx, s.pool, "project", id, `UPDATE projects SET enabled = $2, version = version + 1 WHERE id = $1`, id, enabled)
}

// SetProjectExpiry sets (or, with nil, clears) a project's expiry, as a new version of its row.
// Statistics need no update: they apply the project's expiry to open codes at read time.
func (s *Store) SetProjectExpiry(ctx context.Context, id string, expiresAt *int64) error {
	if err := checkID("project", id); err != nil {
		return err
	}
	return update(ctx, s.pool, "project", id, `UPDATE projects SET expires_at = $2, version = version + 1 WHERE id = $1`, id, toTime(expiresAt))
}

// ProjectAPIKeys reads the keys of a project, oldest first, without their secrets (for the
// operator's key list). contract.ErrNotFound when the project does not exist.
func (s *Store) ProjectAPIKeys(ctx context.Context, projectID string) ([]contract.KeyInfo, error) {
	if _, err := s.Project(ctx, projectID); err != nil {
		return nil, err
	}
	return collect(ctx, s.pool, "select api keys of project "+projectID, func(r pgx.CollectableRow) (contract.KeyInfo, error) {
		var (
			k                   contract.KeyInfo
			revokedAt, lastUsed *time.Time
			createdAt           time.Time
		)
		err := r.Scan(hexIDInto(&k.ID), hexIDInto(&k.ProjectID), &revokedAt, &k.RatePerSec, &k.Burst, &createdAt, &lastUsed)
		k.RevokedAt, k.Revoked, k.CreatedAt = toUnix(revokedAt), revokedAt != nil, createdAt.Unix()
		k.LastUsedAt = toUnix(lastUsed)
		return k, err
	}, `SELECT id, project_id, revoked_at, coalesce(rate_per_sec, 0), coalesce(burst, 0), created_at, last_used_at
		FROM api_keys WHERE project_id = $1 ORDER BY created_at, id`, projectID)
}
