package admin

import (
	"context"
	"time"

	"github.com/acv/acv/api/contract"
)

// Store is what the admin service needs of the record (PostgreSQL; the wiring passes
// *store.Store).
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

// Cache is what the admin service needs of the hot path (Redis; the wiring passes
// *cache.Cache).
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
