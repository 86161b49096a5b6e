package console

import (
	"context"
	"io"
	"time"

	"github.com/acv/acv/api/contract"
)

// Store is what the console needs of the record (PostgreSQL; the wiring passes *store.Store):
// accounts, sessions, the login throttle, the admin audit log and the verification logs'
// search.
type Store interface {
	APIKey(ctx context.Context, id string) (contract.APIKey, error)
	AdminAccount(ctx context.Context, id string) (contract.AdminAccount, error)
	AdminAccountByUsername(ctx context.Context, username string) (contract.AdminAccount, error)
	AdminAccounts(ctx context.Context) ([]contract.AdminAccount, error)
	AdminAudit(ctx context.Context, f contract.AuditFilter) ([]contract.AuditRecord, error)
	AdminSession(ctx context.Context, id []byte) (contract.AdminSession, error)
	AppendAdminAudit(ctx context.Context, e contract.AuditEntry) (contract.AuditRecord, error)
	ClearLoginFailures(ctx context.Context, subject string) error
	CodeByValue(ctx context.Context, projectID, value string) (contract.CodeRecord, error)
	CreateAdminAccount(ctx context.Context, n contract.NewAdminAccount) (contract.AdminAccount, error)
	CreateAdminSession(ctx context.Context, n contract.NewAdminSession) error
	DeleteStaleAdminSessions(ctx context.Context, cutoff time.Time) (int64, error)
	ExportLogs(ctx context.Context, f contract.LogFilter, fn func(contract.LogRecord) error) error
	NewestLog(ctx context.Context, now time.Time) (time.Time, bool, error)
	PruneAdminAudit(ctx context.Context, before time.Time) (int64, error)
	RefundLoginAttempt(ctx context.Context, r contract.LoginReservation) error
	ReserveLoginAttempt(ctx context.Context, limits []contract.LoginLimit, now time.Time, window time.Duration) (
		r contract.LoginReservation, until time.Time, ok bool, err error)
	RevokeAdminSession(ctx context.Context, id []byte, now time.Time) error
	SearchLogs(ctx context.Context, f contract.LogFilter) ([]contract.LogRecord, error)
	SetAdminDisabled(ctx context.Context, id string, disabled bool, now time.Time) error
	SetAdminPassword(ctx context.Context, id, passwordHash string, mustChange bool, now time.Time) error
	SetAdminRole(ctx context.Context, id, role string) error
	TouchAdminSession(ctx context.Context, id []byte, now time.Time) error
	WalkAdminAudit(ctx context.Context, fn func(contract.AuditAnchor, contract.AuditRecord) error) (contract.AuditAnchor, error)
	CheckLogFilter(f contract.LogFilter) error
	OutcomesByHour(ctx context.Context, projectID string, from, to time.Time) ([]contract.HourOutcomes, error)
	LogPartitions(ctx context.Context) ([]contract.LogPartition, error)
	MaintainLogPartitions(ctx context.Context, now time.Time, policy contract.LogPolicy) (contract.LogMaintenance, error)
	CreateAdminToken(ctx context.Context, n contract.NewAdminToken) (contract.AdminToken, error)
	AdminToken(ctx context.Context, id string) (contract.AdminToken, error)
	AdminTokenByHash(ctx context.Context, hash []byte) (contract.AdminToken, error)
	AdminTokens(ctx context.Context, adminID string) ([]contract.AdminToken, error)
	TouchAdminToken(ctx context.Context, id string, now time.Time) error
	RevokeAdminToken(ctx context.Context, id string, now time.Time) error
}

// Operations is what the console needs of the admin service (internal/admin, the operator
// actions the acv command runs too; the wiring passes *admin.Admin).
type Operations interface {
	APIKeys(ctx context.Context, projectID string) ([]contract.KeyInfo, error)
	Batch(ctx context.Context, projectID, batchID string) (contract.Batch, error)
	Batches(ctx context.Context, projectID string, limit int) ([]contract.Batch, error)
	CancelBatch(ctx context.Context, projectID, batchID string) (contract.Batch, error)
	Code(ctx context.Context, projectID, value string, now int64) (contract.CodeWithHistory, error)
	CountMatching(ctx context.Context, projectID string, f contract.CodeFilter, now int64) (int64, error)
	CreateAPIKey(ctx context.Context, projectID string, ratePerSec float64, burst int) (contract.APIKey, error)
	CreateBatch(ctx context.Context, projectID, name string, spec contract.GenerateSpec, createdBy string) (contract.Batch, error)
	CreateProject(ctx context.Context, p contract.NewProject) (contract.Project, error)
	DisableMatching(ctx context.Context, projectID string, f contract.CodeFilter, expected *int64, now int64) (int, error)
	ExportCSV(ctx context.Context, projectID string, now int64, w io.Writer) (int, error)
	ImportCSV(ctx context.Context, projectID string, r io.Reader, opts contract.ImportOptions) (contract.ImportReport, error)
	ListCodes(ctx context.Context, projectID string, q contract.ListQuery, now int64) (contract.CodePage, error)
	ListCodesAfter(ctx context.Context, projectID string, q contract.CursorQuery, now int64) (contract.CursorPage, error)
	Project(ctx context.Context, id string, now int64) (contract.Project, error)
	Projects(ctx context.Context) ([]contract.Project, error)
	RevokeAPIKey(ctx context.Context, keyID string) error
	RevokeBatch(ctx context.Context, projectID, batchID, by string, expected *int64, now int64) (int, error)
	RunBatch(ctx context.Context, projectID, batchID string, step int, progress func(done int)) (contract.Batch, error)
	SetAPIKeyRateLimit(ctx context.Context, keyID string, ratePerSec float64, burst int) error
	SetCodeDisabled(ctx context.Context, projectID, value string, disabled bool) error
	SetProjectEnabled(ctx context.Context, id string, enabled bool) error
	SetProjectExpiry(ctx context.Context, id string, expiresAt *int64) error
	Statistics(ctx context.Context, projectID string, now int64) (contract.ProjectStatistics, error)
	RewrapKeys(ctx context.Context) (contract.RewrapResult, error)
	ActiveKeyID() string
}
