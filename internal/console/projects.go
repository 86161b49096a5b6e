package console

import (
	"context"

	"github.com/acv/acv/api/contract"
)

// Projects lists every project (viewer and above).
func (s *Service) Projects(ctx context.Context, a Actor) ([]contract.Project, error) {
	ad, err := s.operator(a, RoleViewer)
	if err != nil {
		return nil, err
	}
	return ad.Projects(ctx)
}

// Project reads one project with its statistics (viewer and above).
func (s *Service) Project(ctx context.Context, a Actor, id string) (contract.Project, error) {
	ad, err := s.operator(a, RoleViewer)
	if err != nil {
		return contract.Project{}, err
	}
	return ad.Project(ctx, id, s.now().Unix())
}

// Statistics reads a project's statistics as the client API's statistics endpoint answers
// them (viewer and above).
func (s *Service) Statistics(ctx context.Context, a Actor, id string) (contract.ProjectStatistics, error) {
	ad, err := s.operator(a, RoleViewer)
	if err != nil {
		return contract.ProjectStatistics{}, err
	}
	return ad.Statistics(ctx, id, s.now().Unix())
}

// CreateProject creates a project (operator and above).
func (s *Service) CreateProject(ctx context.Context, a Actor, p contract.NewProject) (contract.Project, error) {
	ad, err := s.operator(a, RoleOperator)
	if err != nil {
		return contract.Project{}, err
	}
	proj, err := ad.CreateProject(ctx, p)
	if err != nil {
		return proj, err
	}
	return proj, s.record(ctx, a, "project.create", "project", proj.ID, proj.ID, map[string]any{
		"name": p.Name, "expires_at": p.ExpiresAt})
}

// SetProjectEnabled enables or disables a project everywhere at once (operator and above).
func (s *Service) SetProjectEnabled(ctx context.Context, a Actor, id string, enabled bool) error {
	ad, err := s.operator(a, RoleOperator)
	if err != nil {
		return err
	}
	if err := ad.SetProjectEnabled(ctx, id, enabled); err != nil {
		return err
	}
	action := "project.enable"
	if !enabled {
		action = "project.disable"
	}
	return s.record(ctx, a, action, "project", id, id, nil)
}

// SetProjectExpiry sets or, with nil, clears a project's expiry (operator and above).
func (s *Service) SetProjectExpiry(ctx context.Context, a Actor, id string, expiresAt *int64) error {
	ad, err := s.operator(a, RoleOperator)
	if err != nil {
		return err
	}
	if expiresAt != nil && (*expiresAt < 0 || *expiresAt > maxUnix) {
		return contract.Errorf(contract.KindInvalid, "expires_at must be Unix seconds between 0 and %d", int64(maxUnix))
	}
	if err := ad.SetProjectExpiry(ctx, id, expiresAt); err != nil {
		return err
	}
	action := "project.expire"
	if expiresAt == nil {
		action = "project.clear_expiry"
	}
	return s.record(ctx, a, action, "project", id, id, map[string]any{"expires_at": expiresAt})
}

// maxUnix is the last second PostgreSQL's timestamptz and the hot path's fields both hold
// comfortably (the year 9999).
const maxUnix = 253402300799
