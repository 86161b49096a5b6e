// Package console is the operator console: accounts with roles, sessions, CSRF protection, the
// admin audit log, the admin HTTP API (JSON under /admin/api/v1) and the web pages, on a
// listener of its own (ACV_ADMIN_ADDR). Its operator actions are internal/admin's; the console
// adds who may do them, and the record of who did. The acv command is a client of its API.
//
// Service performs a change for an Actor and records it in the audit log; the route that asks
// for it has already checked the actor's role. Server is the HTTP adapter (cookies, CSRF, bodies, statuses) for the API and
// the pages alike; it reads through the admin service and the record directly, once the route
// has checked the role. They are the Operations, Store and HotPath interfaces declared here,
// which the wiring fills.
package console

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
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

// Operations is what the console needs of the admin service (*admin.Admin, internal/admin).
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
	RunBatch(ctx context.Context, projectID, batchID string, step int) (contract.Batch, error)
	SetAPIKeyRateLimit(ctx context.Context, keyID string, ratePerSec float64, burst int) error
	SetCodeDisabled(ctx context.Context, projectID, value string, disabled bool) error
	SetProjectEnabled(ctx context.Context, id string, enabled bool) error
	SetProjectExpiry(ctx context.Context, id string, expiresAt *int64) error
	Statistics(ctx context.Context, projectID string, now int64) (contract.ProjectStatistics, error)
	RewrapKeys(ctx context.Context) (contract.RewrapResult, error)
	ActiveKeyID() string
}

// HotPath is what manual verify and reactivate need of the Redis hot path: the calls the
// client API makes, so a code redeemed by hand goes through the same checks, transition and
// verification-log event.
type HotPath interface {
	Verify(ctx context.Context, op contract.Operation) (contract.OperationResult, error)
	Reactivate(ctx context.Context, op contract.Operation) (contract.OperationResult, error)
}

// Config wires a Service. Store is required; Admin is needed by every action on projects, keys
// and codes, HotPath by manual verify and reactivate. A field left zero takes its default.
type Config struct {
	Store        Store
	Admin        Operations
	HotPath      HotPath
	Logger       *slog.Logger     // slog.Default()
	Now          func() time.Time // time.Now
	Passwords    PasswordParams   // argon2id cost of new hashes: DefaultPasswordParams
	Throttle     ThrottlePolicy   // DefaultThrottle, field by field
	Sessions     SessionPolicy    // DefaultSessionPolicy
	GenerateStep int              // codes a generation round inserts: 10,000
	// Outbox and Relays read the log pipeline's backlog and live relays for the dashboard,
	// which does not show them when nil.
	Outbox    OutboxReader
	Relays    RelayCounter
	LogPolicy contract.LogPolicy // applied by a maintenance run: contract.DefaultLogPolicy()
}

// Service performs the console's actions for an Actor and records them.
type Service struct {
	cfg   Config
	store Store
	admin Operations
	hot   HotPath
	log   *slog.Logger
	now   func() time.Time
	jobs  *jobs
	// dummyHash is checked for a login naming no account, so it takes as long as any other.
	dummyHash string
}

// NewService builds a Service over cfg.
func NewService(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("console: Store is required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	cfg.Passwords = cmp.Or(cfg.Passwords, DefaultPasswordParams())
	cfg.Sessions = cmp.Or(cfg.Sessions, DefaultSessionPolicy())
	cfg.Throttle = cfg.Throttle.withDefaults()
	dummy, err := HashPassword(cfg.Passwords, "no account has this password")
	if err != nil {
		return nil, err
	}
	j := &jobs{}
	j.ctx, j.cancel = context.WithCancel(context.Background())
	return &Service{cfg: cfg, store: cfg.Store, admin: cfg.Admin, hot: cfg.HotPath, log: cfg.Logger, now: cfg.Now,
		jobs: j, dummyHash: dummy}, nil
}

// Close stops the generation batches running here and waits for them to record it.
func (s *Service) Close() { s.jobs.close() }

// Actor is who performs an action, and from where: a session's account or SystemActor.
type Actor struct {
	AdminID  string // "" for SystemActor
	Username string
	Role     Role
	IP       string // client address, through trusted proxies only; "" for the command line
}

// SystemActor is acv migrate or acv dev making the first account, run on a server by someone
// who holds its database URL: already able to do anything, so it acts as an admin. name says
// who, for the audit log (e.g. "acv migrate").
func SystemActor(name string) Actor { return Actor{Username: name, Role: RoleAdmin} }

var errNoOperatorActions = errors.New("console: operator actions are not configured (no admin service)")

// require refuses an actor whose role is below need, with the 403 the API answers.
func (a Actor) require(need Role) error {
	if !a.Role.Allows(need) {
		return contract.Errorf(contract.KindForbidden, "This needs the %s role; your account has the %s role", need, a.Role)
	}
	return nil
}

// Role is what an account may do, each role all the ones before it may: viewer reads; support
// fixes single codes; operator runs campaigns (projects, keys, generation, import, export);
// admin manages accounts. A route declares the least role it needs.
type Role string

// The roles, from least to most.
const (
	RoleViewer   Role = "viewer"
	RoleSupport  Role = "support"
	RoleOperator Role = "operator"
	RoleAdmin    Role = "admin"
)

// roles are the roles from least to most; a role's rank is its place (0: no role).
var roles = []Role{RoleViewer, RoleSupport, RoleOperator, RoleAdmin}

func (r Role) rank() int { return slices.Index(roles, r) + 1 }

// ParseRole reads a role's name.
func ParseRole(s string) (Role, error) {
	r := Role(s)
	if r.rank() == 0 {
		return "", fmt.Errorf("unknown role %q: viewer, support, operator or admin", s)
	}
	return r, nil
}

// Allows tells whether role r may do what needs role need; an unknown role allows nothing.
func (r Role) Allows(need Role) bool {
	return r.rank() > 0 && need.rank() > 0 && r.rank() >= need.rank()
}

// jobs runs the generation batches in the background; close stops and waits for them, so a
// batch interrupted by a shutdown records that it failed.
type jobs struct {
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

var errShuttingDown = contract.Errorf(contract.KindUnavailable, "the console is shutting down")

// start runs fn in the background with the jobs' context; errShuttingDown once close began.
func (j *jobs) start(fn func(ctx context.Context)) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return errShuttingDown
	}
	j.wg.Go(func() { fn(j.ctx) })
	return nil
}

// close cancels every job and waits until they have returned. It may be called more than once.
func (j *jobs) close() {
	j.mu.Lock()
	j.closed = true
	j.mu.Unlock()
	j.cancel()
	j.wg.Wait()
}
