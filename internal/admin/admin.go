// Package admin holds the operator actions the client API does not offer: projects, API keys,
// code generation, CSV import and export, disabling codes. Every change is written to
// PostgreSQL (the record) and Redis (the hot path), reached through the Store and Cache
// interfaces declared here, so it takes effect at once.
package admin

import (
	"context"
	"errors"
	"fmt"
	"time"

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

// SetProjectEnabled enables or disables a project everywhere: once it returns, every verify on
// any replica sees it. When it fails, run it again: shards that missed it keep their copy.
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

// republishProject copies a project's flags and row version from PostgreSQL to every shard of
// the hot path, which keeps the newest version when two operators publish at once.
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

// Store is what the admin service needs of PostgreSQL (the wiring passes *store.Store).
type Store interface {
	APIKey(ctx context.Context, id string) (contract.APIKey, error)
	APIKeySecrets(ctx context.Context) ([]contract.StoredSecret, error)
	APIKeys(ctx context.Context) ([]contract.APIKey, error)
	AfterBulkLoad(ctx context.Context) error
	ApplySnapshot(ctx context.Context, snap contract.CodeRecord) error
	ApplySnapshots(ctx context.Context, snaps []contract.CodeRecord) error
	Batch(ctx context.Context, projectID, id string) (contract.Batch, error)
	BatchHeartbeat(ctx context.Context, id string) (cancel bool, err error)
	BatchProgress(ctx context.Context, id string, done int) (cancel bool, err error)
	Batches(ctx context.Context, projectID string, limit int) ([]contract.Batch, error)
	BulkPage(ctx context.Context, projectID string, f contract.CodeFilter, now, afterSeq int64, limit int) ([]contract.CodeRecord, int64, error)
	CodeByValue(ctx context.Context, projectID, value string) (contract.CodeRecord, error)
	CountBulk(ctx context.Context, projectID string, f contract.CodeFilter, now int64) (int64, error)
	CreateAPIKey(ctx context.Context, nk contract.NewAPIKey) (contract.APIKey, error)
	CreateBatch(ctx context.Context, nb contract.NewBatch) (contract.Batch, error)
	CreateProject(ctx context.Context, p contract.NewProject) (contract.Project, error)
	ExistingValues(ctx context.Context, projectID string, values []string) ([]string, error)
	ExportCodes(ctx context.Context, projectID string, fn func(contract.CodeRecord) error) error
	FailStaleBatches(ctx context.Context, projectID string, stale time.Duration) (int64, error)
	FinishBatch(ctx context.Context, id, status string, done int, errText string) error
	InsertBatchCodes(ctx context.Context, projectID, batchID string, codes []contract.NewCode) ([]contract.CodeRecord, error)
	InsertCodes(ctx context.Context, projectID string, codes []contract.NewCode) ([]contract.CodeRecord, error)
	ListCodes(ctx context.Context, projectID string, q contract.ListQuery, now int64) ([]contract.CodeRecord, int64, error)
	ListCodesAfter(ctx context.Context, projectID string, q contract.KeysetQuery, now int64) (contract.KeysetPage, error)
	Logs(ctx context.Context, codeID string, limit int) ([]contract.LogEntry, error)
	MarkBatchRevoked(ctx context.Context, id, by string) error
	Project(ctx context.Context, id string) (contract.Project, error)
	ProjectAPIKeys(ctx context.Context, projectID string) ([]contract.KeyInfo, error)
	ProjectState(ctx context.Context, id string) (contract.Project, int64, error)
	ProjectStatistics(ctx context.Context, projectID string, now int64, limit int) (contract.Statistics, []contract.RecentVerification, error)
	Projects(ctx context.Context) ([]contract.Project, error)
	ReplaceAPIKeySecret(ctx context.Context, keyID, old, next string) (bool, error)
	RequestBatchCancel(ctx context.Context, projectID, id string) (contract.Batch, error)
	RevokeAPIKey(ctx context.Context, id string) error
	SetAPIKeyRateLimit(ctx context.Context, id string, ratePerSec float64, burst int) error
	SetProjectEnabled(ctx context.Context, id string, enabled bool) error
	SetProjectExpiry(ctx context.Context, id string, expiresAt *int64) error
	StartBatch(ctx context.Context, id string) (bool, error)
	Statistics(ctx context.Context, projectID string, now int64) (contract.Statistics, error)
}

// Cache is what the admin service needs of Redis (the wiring passes *cache.Cache).
type Cache interface {
	LiveCode(ctx context.Context, projectID, value string) (r contract.CodeRecord, found bool, err error)
	MarkUnknown(ctx context.Context, projectID, value string, ttl time.Duration) error
	PublishProject(ctx context.Context, p contract.Project, version int64) error
	PutCodes(ctx context.Context, projectID string, codes []contract.CodeRecord) error
	PutKey(ctx context.Context, k contract.APIKey) (bool, error)
	RevokeKey(ctx context.Context, keyID string) error
	SetDisabled(ctx context.Context, projectID, value string, disabled bool) (contract.CodeRecord, error)
	SetDisabledMany(ctx context.Context, projectID string, codes []contract.CodeRecord, disabled bool) ([]contract.CodeRecord, error)
}

// notFound names what a store did not find ("project X not found"), never the driver's text.
func notFound(err error, kind, id string) error {
	if err == nil || !errors.Is(err, contract.ErrNotFound) {
		return err
	}
	var named *contract.Error
	if errors.As(err, &named) && named != contract.ErrNotFound {
		return named
	}
	return contract.NotFound("%s %s not found", kind, id)
}

// orEmpty is s, or [] for nil, so a list with no entry shows as [].
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Projects lists every project, oldest first, without statistics.
func (a *Admin) Projects(ctx context.Context) ([]contract.Project, error) {
	ps, err := a.Store.Projects(ctx)
	return orEmpty(ps), err
}

// Project reads one project with its statistics at now (Unix seconds).
func (a *Admin) Project(ctx context.Context, id string, now int64) (contract.Project, error) {
	p, err := a.Store.Project(ctx, id)
	if err != nil {
		return p, notFound(err, "project", id)
	}
	st, err := a.Store.Statistics(ctx, id, now)
	if err != nil {
		return p, notFound(err, "project", id)
	}
	p.Statistics = &st
	return p, nil
}

// Statistics reads a project's statistics at now as the API's statistics endpoint answers them.
func (a *Admin) Statistics(ctx context.Context, projectID string, now int64) (contract.ProjectStatistics, error) {
	st, recent, err := a.Store.ProjectStatistics(ctx, projectID, now, contract.RecentVerificationsLimit)
	if err != nil {
		return contract.ProjectStatistics{}, notFound(err, "project", projectID)
	}
	return contract.NewProjectStatistics(projectID, st, recent), nil
}
