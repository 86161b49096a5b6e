// Package admin holds the operator actions the client API does not offer: projects, API keys,
// code generation, CSV import and export, disabling codes. Every change is written to Postgres
// (the record) and to Redis (the hot path) so it takes effect at once.
//
// It is the admin service: it imports api/contract and pure helpers (internal/safecsv,
// internal/secrets) and reaches PostgreSQL and Redis through the Store and Cache interfaces
// declared here, which the wiring (internal/service, cmd/acv) fills with *store.Store and
// *cache.Cache. It imports no adapter.
package admin

import (
	"context"
	"errors"
	"fmt"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/secrets"
)

// Admin performs operator actions against both stores.
type Admin struct {
	Store Store
	Cache Cache
	// Keys seals the API keys' secrets; creating and re-sealing keys need it.
	Keys *secrets.Keyring
}

// CreateProject records a project and publishes its state to the hot path.
func (a *Admin) CreateProject(ctx context.Context, p contract.NewProject) (contract.Project, error) {
	proj, err := a.Store.CreateProject(ctx, p)
	if err != nil {
		return contract.Project{}, err
	}
	return proj, a.republishProject(ctx, proj.ID)
}

// SetProjectEnabled enables or disables a project everywhere: it returns once PostgreSQL and
// every shard of the hot path hold the change, so every verify that starts afterwards, on any
// replica, answers PROJECT_DISABLED. (The GET endpoints answer 401 once the replicas' key
// caches refresh, within ACV_KEY_CACHE_TTL.) When it fails, run it again: shards that missed
// the change keep their previous copy until then.
func (a *Admin) SetProjectEnabled(ctx context.Context, id string, enabled bool) error {
	if err := a.Store.SetProjectEnabled(ctx, id, enabled); err != nil {
		return notFound(err, "project", id)
	}
	return a.republishProject(ctx, id)
}

// SetProjectExpiry changes a project's expiry (nil: never) everywhere.
func (a *Admin) SetProjectExpiry(ctx context.Context, id string, expiresAt *int64) error {
	if err := a.Store.SetProjectExpiry(ctx, id, expiresAt); err != nil {
		return notFound(err, "project", id)
	}
	return a.republishProject(ctx, id)
}

// republishProject copies a project's flags, as PostgreSQL holds them now, with their row's
// version, to every shard of the hot path. Two operators changing one project at once each
// publish what they read; the copies keep the newest version, which is PostgreSQL's.
func (a *Admin) republishProject(ctx context.Context, id string) error {
	p, version, err := a.Store.ProjectState(ctx, id)
	if err != nil {
		return notFound(err, "project", id)
	}
	if err := a.Cache.PublishProject(ctx, p, version); err != nil {
		return fmt.Errorf("publish project %s to redis: %w", p.ID, err)
	}
	return nil
}

// SetCodeDisabled disables or enables one code: Redis first, as a new version of the code's
// state (the cache loads the code from Postgres when it does not hold it), then the same
// snapshot to Postgres, which applies it only if nothing newer arrived.
func (a *Admin) SetCodeDisabled(ctx context.Context, projectID, value string, disabled bool) error {
	if _, err := a.Store.Project(ctx, projectID); err != nil {
		return notFound(err, "project", projectID)
	}
	row, err := a.Store.CodeByValue(ctx, projectID, value)
	if errors.Is(err, contract.ErrNotFound) {
		return contract.NotFound("code %q not found in project %s", value, projectID)
	}
	if err != nil {
		return fmt.Errorf("code %q: %w", value, err)
	}
	st, err := a.Cache.SetDisabled(ctx, projectID, value, disabled)
	if err != nil {
		return err
	}
	st.ID = row.ID
	return a.Store.ApplySnapshot(ctx, st)
}
